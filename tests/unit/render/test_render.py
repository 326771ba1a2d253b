"""The renderers: pod layout (contract §3.9), spec hash, PDB, backup, TLS modes, ownership, secrets."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import layout, spechash
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import render_corpus as corpus

OWNER = {"name": "demo", "uid": "0d6f7c1e-0000-4000-8000-000000000001"}


def _render(patch=None, **kwargs):
    return render.desired_state(model.load_spec(corpus.spec(patch)), "db", **kwargs)


def _by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def _container(pod, name):
    spec = pod["spec"]
    return next(c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == name)


def test_desired_contract_per_pool_and_cell():
    desired = _render({"pools": {"default": {"cells": ["zone1", "zone2"], "replicasPerCell": 2,
                                             "storage": {"size": "5Gi"}},
                                 "analytics": {"cells": ["zone1"], "pvcDeletionPolicy": {"whenScaled": "Retain"}}}})
    assert [(p.pool, p.cell, p.replicas) for p in desired.pools] == [
        ("analytics", "zone1", 3), ("default", "zone1", 2), ("default", "zone2", 2)]
    default = desired.pools[1]
    assert default.storage_size == "5Gi"
    assert (default.when_scaled, default.when_deleted) == (PVCPolicy.DELETE, PVCPolicy.RETAIN)
    assert desired.pools[0].when_scaled is PVCPolicy.RETAIN
    assert desired.shard == naming.ShardId("demo", "postgres", "default", "0-inf")


def test_pool_pod_layout_matches_the_contract():
    desired = _render({"cellTopologyLabels": {"zone1": {"topology.kubernetes.io/zone": "us-east-1a"}},
                       "pools": {"default": {"nodeSelector": {"disk": "ssd"}}}, **corpus.ERA_A})
    pool = desired.pools[0]
    pod = pool.pod(1)
    sid = desired.shard
    name = naming.pod_name(sid, "default", "zone1", 1)
    assert pod["metadata"]["name"] == name
    assert pod["metadata"]["labels"] == {**labels.pool_labels(sid, "default", "zone1"), keys.LABEL_INDEX: "1",
                                        keys.LABEL_DNS: keys.DNS_PUBLISHED}
    assert pod["metadata"]["finalizers"] == [keys.FINALIZER_POD]
    assert pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] == pool.spec_hash
    spec = pod["spec"]
    assert spec["hostname"] == name
    assert spec["subdomain"] == naming.headless_service_name(sid, "default", "zone1")
    assert spec["nodeSelector"] == {"topology.kubernetes.io/zone": "us-east-1a", "disk": "ssd"}
    assert spec["terminationGracePeriodSeconds"] == 30
    assert [c["name"] for c in spec["initContainers"]] == ["multipooler"]
    assert spec["initContainers"][0]["restartPolicy"] == "Always"
    assert [c["name"] for c in spec["containers"]] == ["postgres", "postgres-exporter"]

    pooler = _container(pod, "multipooler")
    assert f"--service-id={naming.service_id(name)}" in pooler["args"]
    assert "--cell=zone1" in pooler["args"] and "--topo-global-server-addresses=etcd-0.etcd:2379" in pooler["args"]
    assert {p["containerPort"] for p in pooler["ports"]} == {15200, 15270, 5432}
    assert pooler["readinessProbe"]["httpGet"] == {"path": "/live", "port": 15200}
    assert pooler["startupProbe"]["failureThreshold"] == 30

    pgctld = _container(pod, "postgres")
    assert pgctld["command"] == ["/usr/local/bin/pgctld"] and pgctld["args"][0] == "server"
    assert "--pg-hba-template=/etc/pgctld/pg_hba_template.conf" in pgctld["args"]
    assert {m["name"]: m["mountPath"] for m in pgctld["volumeMounts"]}[layout.VOL_DATA] == "/var/lib/pooler"

    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["pgdata"]["persistentVolumeClaim"]["claimName"] == naming.data_pvc_name(sid, "default", "zone1", 1)
    assert volumes["backup-data"]["persistentVolumeClaim"]["claimName"] == naming.backup_pvc_name(sid, "zone1")
    assert volumes["pg-hba-template"]["configMap"]["name"] == naming.pg_hba_configmap_name(sid)
    assert volumes["pgbackrest-certs"]["projected"]["defaultMode"] == 0o440

    pvc = pool.pvc(1)
    assert pvc["metadata"]["name"] == naming.data_pvc_name(sid, "default", "zone1", 1)
    assert pvc["metadata"]["labels"][keys.LABEL_INDEX] == "1"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"


def test_every_container_meets_the_restricted_pod_security_standard():
    desired = _render()
    pods = [p.pod(0) for p in desired.pools]
    deployments = [o["spec"]["template"] for o in _by_kind(desired.objects, "Deployment")]
    for pod in pods + deployments:
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
            assert sc["runAsNonRoot"] is True


def test_spec_hash_is_per_pool_not_per_index_and_tracks_the_pod_spec():
    base = _render()
    pool = base.pools[0]
    assert {pool.pod(i)["metadata"]["annotations"][keys.ANN_SPEC_HASH] for i in range(5)} == {pool.spec_hash}
    assert re.fullmatch(r"[0-9a-f]{8}", pool.spec_hash)
    # Scaling changes no pod; an image or a referenced config does.
    assert _render({"pools": {"default": {"replicasPerCell": 7}}}).pools[0].spec_hash == pool.spec_hash
    assert _render({"images": {"postgres": "pgctld:new"}}).pools[0].spec_hash != pool.spec_hash
    ref = {"postgresConfigRef": {"name": "pg-conf"}}
    one = _render(ref, referenced_config_hash=spechash.config_hash("shared_buffers = 1GB\n"))
    two = _render(ref, referenced_config_hash=spechash.config_hash("shared_buffers = 2GB\n"))
    assert one.pools[0].spec_hash != two.pools[0].spec_hash
    assert one.pools[0].pod(0)["metadata"]["annotations"][keys.ANN_POSTGRES_CONFIG_HASH] == \
        spechash.config_hash("shared_buffers = 1GB\n")
    # Metadata-only inputs (owner, project ref) never roll pods.
    assert _render(owner=OWNER, project_ref="p").pools[0].spec_hash == pool.spec_hash


def test_pdb_allows_no_eviction_through_min_available():
    desired = _render({"pools": {"default": {"replicasPerCell": 4}}})
    (pdb,) = _by_kind(desired.objects, "PodDisruptionBudget")
    assert pdb["spec"] == {"minAvailable": 4,
                           "selector": {"matchLabels": labels.pool_selector(desired.shard, "default", "zone1")}}
    assert "maxUnavailable" not in pdb["spec"]


def test_headless_service_publishes_not_ready_pods():
    desired = _render(corpus.ERA_A)
    (svc,) = [s for s in _by_kind(desired.objects, "Service") if s["spec"].get("clusterIP") == "None"]
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert [p["port"] for p in svc["spec"]["ports"]] == [15200, 15270, 5432, 9187]
    # It selects the pool's pods that carry the DNS label, which every rendered pod does (and the PDB
    # does not ask for it: a pod out of DNS is still counted).
    assert svc["spec"]["selector"] == {**labels.pool_selector(desired.shard, "default", "zone1"),
                                       keys.LABEL_DNS: keys.DNS_PUBLISHED}
    pod = desired.pools[0].pod(0)
    assert pod["metadata"]["labels"].items() >= svc["spec"]["selector"].items()
    assert keys.LABEL_DNS not in desired.pools[0].pvc(0)["metadata"]["labels"]


def test_filesystem_backup_has_one_pvc_per_cell_and_s3_uses_an_empty_dir():
    fs = _render({"pools": {"default": {"cells": ["zone1", "zone2"]}}, **corpus.ERA_A})
    assert len(_by_kind(fs.objects, "PersistentVolumeClaim")) == 2
    s3 = _render({"backup": {"type": "s3", "s3": {"bucket": "backups", "region": "eu-west-1",
                                                  "credentialsSecret": "aws"}}})
    assert _by_kind(s3.objects, "PersistentVolumeClaim") == []
    pod = s3.pools[0].pod(0)
    assert {"name": "backup-data", "emptyDir": {}} in pod["spec"]["volumes"]
    env = {e["name"]: e for e in _container(pod, "postgres")["env"]}
    assert env["AWS_REGION"]["value"] == "eu-west-1"
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "aws", "key": "AWS_ACCESS_KEY_ID"}
    irsa = _render({"backup": {"type": "s3", "s3": {"bucket": "b-1", "region": "r", "serviceAccountName": "pg"}}})
    assert irsa.pools[0].pod(0)["spec"]["serviceAccountName"] == "pg"
    assert pod["spec"]["automountServiceAccountToken"] is False


def test_pgbackrest_tls_modes():
    sid = _render().shard
    auto = _render().pools[0].pod(0)
    sources = next(v for v in auto["spec"]["volumes"] if v["name"] == "pgbackrest-certs")["projected"]["sources"]
    assert [s["secret"]["name"] for s in sources] == [naming.pgbackrest_ca_secret_name(sid),
                                                      naming.pgbackrest_tls_secret_name(sid)]
    user = _render({"backup": {"pgbackrestTLS": {"mode": "secret", "secretName": "my-tls"}}}).pools[0].pod(0)
    sources = next(v for v in user["spec"]["volumes"] if v["name"] == "pgbackrest-certs")["projected"]["sources"]
    assert [s["secret"]["name"] for s in sources] == ["my-tls"]
    assert {i["path"] for i in sources[0]["secret"]["items"]} == {"ca.crt", "pgbackrest.crt", "pgbackrest.key"}
    issuer = {"name": "ca", "kind": "ClusterIssuer"}
    cm = _render({"backup": {"pgbackrestTLS": {"mode": "certManager", "issuerRef": issuer}}})
    (cert,) = _by_kind(cm.objects, "Certificate")
    svc = naming.headless_service_name(sid, "default", "zone1")
    assert f"*.{svc}.db.svc.cluster.local" in cert["spec"]["dnsNames"]
    assert cert["spec"]["usages"] == ["server auth", "client auth"]
    assert cert["spec"]["secretName"] == naming.pgbackrest_tls_secret_name(sid)


def test_no_secret_value_is_ever_rendered():
    desired = _render({"backup": {"type": "s3", "s3": {"bucket": "b-1", "region": "r", "credentialsSecret": "aws"}},
                       "postgresPasswordSecretRef": {"name": "pg-pass", "key": "pw"}, **corpus.ERA_A})
    objects = render.manifests(desired)
    assert not _by_kind(objects, "Secret")
    for pod in _by_kind(objects, "Pod"):
        for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
            for env in c.get("env", []):
                if any(word in env["name"] for word in ("PASSWORD", "PASS", "SECRET", "KEY_ID")):
                    assert "value" not in env and "secretKeyRef" in env["valueFrom"], env
    pooler = _container(desired.pools[0].pod(0), "multipooler")
    expected = {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pg-pass", "key": "pw"}}}
    assert expected in pooler["env"]


def test_owner_reference_on_everything_but_retained_pvcs():
    desired = _render(owner=OWNER)
    for obj in desired.objects:
        refs = obj["metadata"].get("ownerReferences")
        if obj["kind"] == "PersistentVolumeClaim":
            assert refs is None  # whenDeleted defaults to Retain
        else:
            assert refs == [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "demo",
                             "uid": OWNER["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert "ownerReferences" in desired.pools[0].pod(0)["metadata"]
    assert "ownerReferences" not in desired.pools[0].pvc(0)["metadata"]
    deleting = _render({"pvcDeletionPolicy": {"whenDeleted": "Delete"}}, owner=OWNER)
    assert all("ownerReferences" in p["metadata"] for p in _by_kind(deleting.objects, "PersistentVolumeClaim"))


def test_postgres_config_overrides_become_a_config_map_and_roll_pods():
    desired = _render({"postgresConfig": {"max_connections": "200", "search_path": "it's"}})
    cms = {c["metadata"]["name"]: c for c in _by_kind(desired.objects, "ConfigMap")}
    (conf,) = [c for name, c in cms.items() if name.endswith("-postgres-config")]
    assert conf["data"]["postgresql.conf"] == "max_connections = '200'\nsearch_path = 'it''s'\n"
    pod = desired.pools[0].pod(0)
    assert pod["metadata"]["annotations"][keys.ANN_POSTGRES_CONFIG_HASH] == spechash.config_hash(
        conf["data"]["postgresql.conf"])
    assert desired.pools[0].spec_hash != _render().pools[0].spec_hash


def test_multiorch_runs_in_every_pool_cell_unless_listed():
    desired = _render({"pools": {"a": {"cells": ["z2", "z1"]}, "default": {"cells": ["z3"]}}})
    deployments = _by_kind(desired.objects, "Deployment")
    assert sorted(d["metadata"]["name"] for d in deployments) == sorted(
        naming.multiorch_deployment_name(desired.shard, c) for c in ("z1", "z2", "z3"))
    orch = deployments[0]["spec"]["template"]["spec"]["containers"][0]
    assert "--watch-targets=postgres/default/0-inf" in orch["args"]
    only = _render({"multiorch": {"cells": ["zone1"], "replicas": 2}})
    (dep,) = _by_kind(only.objects, "Deployment")
    assert dep["spec"]["replicas"] == 2


def test_manifests_expand_every_pool_in_apply_order():
    objects = render.manifests(_render({"pools": {"default": {"cells": ["a", "b"], "replicasPerCell": 2}},
                                        **corpus.ERA_A}))
    kinds = [o["kind"] for o in objects]
    assert kinds.count("Pod") == 4 and kinds.count("PersistentVolumeClaim") == 4 + 2
    assert kinds.index("ConfigMap") < kinds.index("PersistentVolumeClaim") < kinds.index("Pod")
    assert len({(o["kind"], o["metadata"]["name"]) for o in objects}) == len(objects)


dns = st.from_regex(r"\A[a-z][a-z0-9-]{0,40}[a-z0-9]\Z")


@settings(max_examples=60, deadline=None)
@given(cluster=dns, pool=dns, cell=dns, replicas=st.integers(2, 32))
def test_every_rendered_name_fits_kubernetes_limits(cluster, pool, cell, replicas):
    spec = model.load_spec(corpus.spec({"clusterName": cluster[:63], "pools": None,
                                        "multigateway": {"enabled": True}}) |
                           {"pools": {pool: {"cells": [cell], "replicasPerCell": replicas}}})
    desired = render.desired_state(spec, "db")
    label = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    pod = desired.pools[0].pod(replicas - 1)
    assert len(pod["spec"]["hostname"]) <= 63 and label.match(pod["spec"]["hostname"])
    assert len(pod["spec"]["subdomain"]) <= 63 and label.match(pod["spec"]["subdomain"])
    for obj in desired.objects:
        limit = 253 if obj["kind"] in {"ConfigMap", "Deployment", "PersistentVolumeClaim", "NetworkPolicy"} else 63
        assert len(obj["metadata"]["name"]) <= limit, obj["metadata"]["name"]


@pytest.mark.parametrize("patch", [{}, {"pools": {"default": {"cells": ["a", "b"]}}}])
def test_render_is_deterministic_within_a_process(patch):
    assert render.manifests(_render(patch)) == render.manifests(_render(patch))


# Digests of everything the renderer emitted before `multigres.version` existed (recorded from that
# code): era A must keep rendering these bytes, so its live pods never roll for this change.
ERA_A_BEFORE = [
    ({}, "b829bff7", ["71d24cdc"]),
    ({"backup": {"type": "s3", "s3": {"bucket": "bkt", "region": "eu-west-1", "serviceAccountName": "pg"}}},
     "44624d7a", ["c5457bb0"]),
    ({"backup": {"pgbackrestTLS": {"mode": "certManager", "issuerRef": {"name": "ca"}}},
      "multiorch": {"cells": ["zone1"], "replicas": 2}}, "d6e47faa", ["e72bd395"]),
    ({"pools": {"default": {"cells": ["a", "b"], "replicasPerCell": 2}},
      "pvcDeletionPolicy": {"whenDeleted": "Delete"}}, "757b1eaf", ["9cc3abbe", "76527afe"]),
]
# ... and the same after the two deliberate changes of issue 12, which do roll era-A pods: the
# exporter's numeric runAsUser (a kubelet refused the container before) and the shard NetworkPolicy.
ERA_A_NOW = [("06a7542d", "3e1ff650"), ("6d789db3", "ba6b43e8"), ("3b6e794b", "78901e68"),
             ("c1c7a0f6,55bb742d", "6e5edb18")]


def _pdb_as_before_node_maintenance(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The PDB allowed one eviction before pool pods left cordoned nodes through our drain (issue 23);
    that change rolls no pod (the spec hashes stay) and is set back here, so the digests below still
    prove that nothing else changed."""
    for obj in manifests:
        if obj["kind"] == "PodDisruptionBudget":
            obj["spec"]["minAvailable"] -= 1
    return manifests


def _agent_rule_as_before_handover(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's NetworkPolicy rule gained multiorch's gRPC port for the primary handover (issue 24);
    it rolls no pod and is set back here like the PDB above."""
    for obj in manifests:
        if obj["kind"] == "NetworkPolicy":
            for rule in obj["spec"]["ingress"]:
                ports = [p["port"] for p in rule["ports"]]
                if ports == [layout.MULTIPOOLER_GRPC, layout.MULTIORCH_GRPC]:
                    rule["ports"] = [p for p in rule["ports"] if p["port"] == layout.MULTIPOOLER_GRPC]
    return manifests


def _dns_label_as_before(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pool pods gained the DNS label and the headless Services select it (issue 24: a finished drain
    leaves DNS); it rolls no pod and is set back here like the PDB above."""
    for obj in manifests:
        if obj["kind"] in ("Pod", "Service"):
            for labels_ in (obj["metadata"].get("labels") or {}, (obj.get("spec") or {}).get("selector") or {}):
                labels_.pop(keys.LABEL_DNS, None)
    return manifests


def _as_before(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _dns_label_as_before(_pdb_as_before_node_maintenance(manifests))


@pytest.mark.parametrize(("patch", "digest", "hashes"), ERA_A_BEFORE)
def test_era_a_renders_exactly_what_it_rendered_before_versions_existed(patch, digest, hashes, monkeypatch):
    """Without the two changes of issue 12 (exporter uid, NetworkPolicy), the bytes are the old ones."""
    monkeypatch.setattr(layout, "EXPORTER_UID", None)
    desired = _render({**patch, **corpus.ERA_A, "security": {"networkPolicy": {"enabled": False}}},
                      owner={"name": "demo", "uid": "u"}, referenced_config_hash="0" * 64)
    assert [p.spec_hash for p in desired.pools] == hashes
    assert spechash.digest(_as_before(render.manifests(desired))) == digest


@pytest.mark.parametrize(("patch", "now"),
                         [(before[0], now) for before, now in zip(ERA_A_BEFORE, ERA_A_NOW, strict=True)])
def test_era_a_renders_what_issue_12_changed_and_nothing_else(patch, now):
    desired = _render({**patch, **corpus.ERA_A}, owner={"name": "demo", "uid": "u"},
                      referenced_config_hash="0" * 64)
    hashes, digest = now
    assert ",".join(p.spec_hash for p in desired.pools) == hashes
    manifests = _agent_rule_as_before_handover(_as_before(render.manifests(desired)))
    assert spechash.digest(manifests) == digest
