"""Issue 12 in the renderer: SCRAM-only pg_hba for v0.1.0, the shard's NetworkPolicy (selectors, ports,
peers, determinism), a numeric uid for every container whose image user is a name, postgresql.conf
quoting that no value can escape, and user labels, annotations and settings that may not take over
what the engine owns (each refused naming the offending key)."""

from __future__ import annotations

import re

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.render import context as render_context
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.render import security as render_security
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.spec import security as model_security

from tests import render_corpus as corpus

V0_1_MULTIGRES_IMAGE = model.RELEASE_IMAGES[keys.MultigresVersion.V0_1_0].multigres


def _render(patch: dict | None = None) -> render.Desired:
    return render.desired_state(model.load_spec(corpus.spec(patch)), "db", owner={"name": "demo", "uid": "u"})


def _hba(desired: render.Desired) -> str:
    (cm,) = [o for o in desired.objects if o["metadata"]["name"].endswith("-pg-hba")]
    return cm["data"][layout.PG_HBA_KEY]


def _rules(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _policy(desired: render.Desired) -> dict:
    (policy,) = [o for o in desired.objects if o["kind"] == "NetworkPolicy"]
    return policy


def _ports(rule: dict) -> list[int]:
    return [p["port"] for p in rule["ports"]]


# --- pg_hba ------------------------------------------------------------------------------------------
def test_v0_1_pg_hba_needs_scram_for_every_login_and_trusts_nothing():
    rules = _rules(_hba(_render()))
    assert all(r[-1] == "scram-sha-256" for r in rules), rules
    assert not [r for r in rules if "trust" in r or "peer" in r]
    assert ["local", "all", "all", "scram-sha-256"] in rules
    replication = [r for r in rules if r[1] == "replication"]
    assert {r[3] for r in replication} == set(model_security.DEFAULT_POD_NETWORK_CIDRS)
    assert {r[2] for r in replication} == {"{{.User}}"}  # standbys connect as the superuser only
    assert {r[3] for r in rules if r[0] == "host" and r[1] == "all"} == {
        "127.0.0.1/32", "::1/128", *model_security.DEFAULT_POD_NETWORK_CIDRS}


def test_pod_network_cidrs_are_the_only_remote_sources():
    rules = _rules(_hba(_render({"security": {"podNetworkCIDRs": ["10.244.0.0/16", "fd00:10::/64"]}})))
    remote = {r[3] for r in rules if r[0] == "host"} - {"127.0.0.1/32", "::1/128"}
    assert remote == {"10.244.0.0/16", "fd00:10::/64"}


def test_a_template_of_your_own_is_used_verbatim_and_era_a_keeps_its_trusting_default():
    mine = "local all all scram-sha-256\n"
    assert _hba(_render({"pgHbaTemplate": mine})) == mine
    assert _hba(_render(corpus.ERA_A)) == render_security.ERA_A_PG_HBA


def test_bad_pod_networks_are_refused_naming_the_entry():
    with pytest.raises(model.SpecError) as info:
        model.load_spec(corpus.spec({"security": {"podNetworkCIDRs": ["10.0.0.1/8", "10.0.0.0/33"]}}))
    text = str(info.value)
    assert "spec.security.podNetworkCIDRs[0]" in text and "host bits set" in text
    assert "spec.security.podNetworkCIDRs[1]" in text


# --- NetworkPolicy -----------------------------------------------------------------------------------
def test_the_policy_isolates_every_pod_of_the_shard_and_admits_exactly_the_pools_traffic():
    desired = _render({"multigateway": {"enabled": True}})
    policy = _policy(desired)
    shard = labels.shard_selector(desired.shard)
    assert policy["spec"]["podSelector"] == {"matchLabels": shard}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    internal, agent, clients, metrics = policy["spec"]["ingress"]
    assert internal["from"] == [{"podSelector": {"matchLabels": shard}}]
    assert _ports(internal) == sorted([layout.POSTGRES, layout.PGBACKREST, layout.MULTIPOOLER_GRPC,
                                       layout.MULTIORCH_GRPC, layout.MULTIGATEWAY_GRPC])
    assert agent["from"] == [{
        "namespaceSelector": {"matchLabels": {keys.LABEL_NAMESPACE_NAME: keys.INSTALL_NAMESPACE}},
        "podSelector": {"matchLabels": {keys.LABEL_APP_COMPONENT: keys.AGENT_COMPONENT,
                                        keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME}}}]
    assert _ports(agent) == [layout.MULTIPOOLER_GRPC, layout.MULTIORCH_GRPC]
    assert clients == {"from": [{"podSelector": {}}], "ports": [
        {"protocol": "TCP", "port": layout.POSTGRES}, {"protocol": "TCP", "port": layout.MULTIGATEWAY_PG}]}
    assert metrics == {"from": [{"namespaceSelector": {}}], "ports": [{"protocol": "TCP", "port": layout.EXPORTER}]}


def _pods_and_templates(desired: render.Desired) -> list[dict]:
    return [o["spec"]["template"] if o["kind"] == "Deployment" else o for o in render.manifests(desired)
            if o["kind"] in ("Pod", "Deployment")]


@pytest.mark.parametrize("patch", [{}, {"multigateway": {"enabled": True}}, corpus.ERA_A],
                         ids=["v0.1", "gateway", "era-a"])
def test_the_policy_selects_every_pod_it_renders_and_opens_only_ports_something_listens_on(patch):
    desired = _render(patch)
    policy = _policy(desired)
    selector = policy["spec"]["podSelector"]["matchLabels"]
    listening: set[int] = set()
    for pod in _pods_and_templates(desired):
        assert selector.items() <= pod["metadata"]["labels"].items(), pod["metadata"]
        for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            listening |= {p["containerPort"] for p in c.get("ports", [])}
    opened = {port for rule in policy["spec"]["ingress"] for port in _ports(rule)}
    assert opened <= listening
    # pgctld and every HTTP endpoint stay closed to other pods (probes come from the node).
    assert not opened & {layout.PGCTLD_GRPC, layout.PGCTLD_HTTP, layout.MULTIPOOLER_HTTP, layout.MULTIORCH_HTTP,
                         layout.MULTIGATEWAY_HTTP}


def test_peers_render_as_written_and_empty_lists_admit_nobody():
    desired = _render({"monitoring": {"postgresExporter": {"enabled": True}}, "security": {"networkPolicy": {
        "agent": {"namespaceSelector": {"matchLabels": {"team": "db"}}},
        "clients": [{"ipBlock": {"cidr": "10.8.0.0/16", "except": ["10.8.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"b": "2", "a": "1"}}, "podSelector": {}}],
        "metrics": []}}})
    _, agent, clients = _policy(desired)["spec"]["ingress"]
    assert agent["from"] == [{"namespaceSelector": {"matchLabels": {"team": "db"}}}]
    assert clients["from"] == [{"ipBlock": {"cidr": "10.8.0.0/16", "except": ["10.8.1.0/24"]}},
                               {"namespaceSelector": {"matchLabels": {"a": "1", "b": "2"}}, "podSelector": {}}]
    nobody = _policy(_render({"security": {"networkPolicy": {"clients": [], "metrics": []}}}))
    assert [_ports(r) for r in nobody["spec"]["ingress"]][1:] == [[layout.MULTIPOOLER_GRPC, layout.MULTIORCH_GRPC]]


def test_no_metrics_rule_without_the_exporter_and_no_policy_when_turned_off():
    ingress = _policy(_render({"monitoring": {"postgresExporter": {"enabled": False}}}))["spec"]["ingress"]
    assert layout.EXPORTER not in {p for rule in ingress for p in _ports(rule)}
    off = _render({"security": {"networkPolicy": {"enabled": False}}})
    assert "NetworkPolicy" not in {o["kind"] for o in off.objects}


def test_the_policy_is_deterministic_and_named_after_the_shard():
    a, b = _policy(_render()), _policy(_render())
    assert a == b and a["metadata"]["name"].endswith("-network-policy")
    assert a["metadata"]["ownerReferences"][0]["uid"] == "u"
    assert a["metadata"]["labels"][keys.LABEL_APP_COMPONENT] == keys.COMPONENT_NETWORK_POLICY


# --- numeric users --------------------------------------------------------------------------------------
@pytest.mark.parametrize("patch", [{}, corpus.ERA_A], ids=["v0.1", "era-a"])
def test_the_exporter_runs_as_its_images_numeric_nobody(patch):
    pod = _render({**patch, "monitoring": {"postgresExporter": {"enabled": True}}}).pools[0].pod(0)
    (exporter,) = [c for c in pod["spec"]["containers"] if c["name"] == "postgres-exporter"]
    sc = exporter["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]) == (65534, 65534, True)


def test_every_v0_1_container_has_a_numeric_user_the_kubelet_can_check():
    """runAsNonRoot with an image whose USER is a name (the exporter's `nobody`, pgctld's `postgres`)
    makes a kubelet refuse the container; only the multigres image says `USER 65532:65532` itself."""
    desired = _render({"multigateway": {"enabled": True}, "monitoring": {"postgresExporter": {"enabled": True}}})
    for pod in _pods_and_templates(desired):
        pod_uid = (pod["spec"].get("securityContext") or {}).get("runAsUser")
        for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            uid = (c.get("securityContext") or {}).get("runAsUser", pod_uid)
            assert c["securityContext"]["runAsNonRoot"] is True
            assert (isinstance(uid, int) and uid > 0) or c["image"] == V0_1_MULTIGRES_IMAGE, c["name"]


# --- postgresql.conf -----------------------------------------------------------------------------------
HOSTILE = {
    "search_path": "it's",
    "application_name": "a\\",  # a trailing backslash would escape the closing quote
    "cluster_name": "x' \\' ; fsync = 'off",
    "log_line_prefix": "%m [%p] \\n ",  # a backslash-n pair, not a line break
}


def test_hostile_values_stay_inside_their_quotes():
    text = render_context.postgres_config_text(model.load_spec(corpus.spec({"postgresConfig": HOSTILE})))
    lines = text.splitlines()
    assert [line.split(" = ", 1)[0] for line in lines] == sorted(HOSTILE)
    assert "application_name = 'a\\\\'" in lines
    assert "search_path = 'it''s'" in lines
    assert "cluster_name = 'x'' \\\\'' ; fsync = ''off'" in lines
    for line in lines:  # one quoted literal per line: quotes paired, no lone backslash
        literal = line.split(" = ", 1)[1]
        assert re.fullmatch(r"'([^'\\]|''|\\\\)*'", literal), line


def test_a_line_break_is_refused_naming_the_key_even_past_the_model():
    with pytest.raises(model.SpecError, match=r"spec\.postgresConfig: .*: work_mem \(rule: postgres-config-single"):
        model.load_spec(corpus.spec({"postgresConfig": {"work_mem": "8MB\nfsync = off", "search_path": "ok"}}))
    with pytest.raises(ValueError, match=r"postgresConfig\.work_mem"):
        render_context.postgres_conf_quote("work_mem", "8MB\nfsync = off")


@pytest.mark.parametrize(("patch", "expected"), [
    ({"postgresConfig": {"hba_file": "/x", "port": "1", "work_mem": "8MB"}},
     ": hba_file, port (rule: postgres-config-owned-settings)"),
    ({"multiorch": {"podLabels": {"multigres.com/role": "PRIMARY", "team": "db", keys.LABEL_APP_INSTANCE: "other"}}},
     f": {keys.LABEL_APP_INSTANCE}, multigres.com/role (rule: pod-labels-not-owned)"),
    ({"multigateway": {"podAnnotations": {keys.ANN_DRAIN_STATE: "requested", "note": "ok", keys.ANN_SPEC_HASH: "x",
                                          "example.com/multigres.com": "fine"}}},
     f": {keys.ANN_DRAIN_STATE}, {keys.ANN_SPEC_HASH} (rule: pod-annotations-not-owned)"),
], ids=["settings", "labels", "annotations"])
def test_owned_settings_labels_and_annotations_are_refused_naming_each_key(patch, expected):
    with pytest.raises(model.SpecError) as info:
        model.load_spec(corpus.spec(patch))
    assert expected in str(info.value)


def test_labels_and_annotations_of_other_domains_are_accepted():
    ok = model.load_spec(corpus.spec({"multiorch": {"podLabels": {"team": "db", "app.kubernetes.io/version": "1"},
                                                    "podAnnotations": {"example.com/multigres.com": "fine"}}}))
    assert ok.multiorch.pod_labels["team"] == "db"
