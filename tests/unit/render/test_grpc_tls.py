"""spec.security.grpcTLS (docs/operations.md, "TLS for gRPC"): the Secret mounted read-only into
multipooler, multiorch and multigateway, server flags on all three, client flags on the two that dial
multipoolers, pgctld's plaintext gRPC kept on loopback, nothing at all when unset, refusal for era A
and bad values refused naming the field."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import context as render_context
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.render import pool_era_a as era_a
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from multigres_pools.install import bundle
from tests import render_corpus as corpus

TLS = {"security": {"grpcTLS": {"secretName": "grpc-certs"}}}
SERVER = ["--grpc-cert=/certs/grpc/tls.crt", "--grpc-key=/certs/grpc/tls.key", "--grpc-ca=/certs/grpc/ca.crt"]
CLIENT = ["--multipooler-grpc-cert=/certs/grpc/tls.crt", "--multipooler-grpc-key=/certs/grpc/tls.key",
          "--multipooler-grpc-ca=/certs/grpc/ca.crt", "--multipooler-grpc-require-tls=true"]
MOUNT = {"name": "grpc-tls", "mountPath": "/certs/grpc", "readOnly": True}


def _render(patch=None):
    merged = {**(patch or {}), "multigateway": {"enabled": True}}
    return render.desired_state(model.load_spec(corpus.spec(merged)), "db")


def _container(pod_spec, name):
    return next(c for c in pod_spec.get("initContainers", []) + pod_spec["containers"] if c["name"] == name)


def _cell_pod(desired, component):
    (dep,) = [d for d in desired.objects if d["kind"] == "Deployment"
              and d["metadata"]["labels"][keys.LABEL_APP_COMPONENT] == component]
    return dep["spec"]["template"]["spec"]


def _tls_args(args):
    return [a for a in args if a.startswith(("--grpc-cert", "--grpc-key", "--grpc-ca", "--multipooler-grpc",
                                             "--grpc-bind-address"))]


def test_multipooler_serves_mutual_tls_from_the_mounted_secret():
    pod = _render(TLS).pools[0].pod(0)["spec"]
    pooler = _container(pod, "multipooler")
    assert _tls_args(pooler["args"]) == SERVER
    assert MOUNT in pooler["volumeMounts"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == layout.VOL_GRPC_TLS]
    assert volume == {"name": "grpc-tls", "secret": {"secretName": "grpc-certs", "defaultMode": 0o440, "items": [
        {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"},
        {"key": "ca.crt", "path": "ca.crt"}]}}


def test_pgctld_keeps_plaintext_grpc_on_loopback_and_never_sees_the_key():
    pgctld = _container(_render(TLS).pools[0].pod(0)["spec"], "postgres")
    assert _tls_args(pgctld["args"]) == ["--grpc-bind-address=127.0.0.1"]
    assert MOUNT not in pgctld["volumeMounts"]


@pytest.mark.parametrize("component", ["multiorch", "multigateway"])
def test_multiorch_and_multigateway_serve_and_dial_with_the_certificate(component):
    pod = _cell_pod(_render(TLS), component)
    (container,) = pod["containers"]
    assert _tls_args(container["args"]) == SERVER + CLIENT
    assert container["volumeMounts"] == [MOUNT]
    assert [v["secret"]["secretName"] for v in pod["volumes"]] == ["grpc-certs"]
    assert pod["securityContext"]["fsGroup"] == layout.CELL_FS_GROUP  # reads the 0440 files


def test_server_name_is_passed_to_the_clients():
    desired = _render({"security": {"grpcTLS": {"secretName": "grpc-certs", "serverName": "pooler.multigres"}}})
    (orch,) = _cell_pod(desired, "multiorch")["containers"]
    assert orch["args"][-1] == "--multipooler-grpc-server-name=pooler.multigres"


def test_unset_renders_nothing_of_it():
    desired = _render()
    pod = desired.pools[0].pod(0)["spec"]
    for container in pod["initContainers"] + pod["containers"]:
        assert not _tls_args(container.get("args", []))
    assert all(v["name"] != layout.VOL_GRPC_TLS for v in pod["volumes"])
    for component in ("multiorch", "multigateway"):
        spec = _cell_pod(desired, component)
        assert "volumes" not in spec and "volumeMounts" not in spec["containers"][0]
        assert "fsGroup" not in spec["securityContext"]
        assert not _tls_args(spec["containers"][0]["args"])


def test_era_a_is_refused_naming_the_field():
    with pytest.raises(model.SpecError, match=r"spec\.security\.grpcTLS: .*rendered only for Multigres v0\.1\.0"
                                              r".*\(rule: grpc-tls-needs-v0-1\)"):
        model.load_spec(corpus.spec({**corpus.ERA_A, **TLS}))


def test_era_a_renderer_refuses_an_unvalidated_spec():
    with_tls = model.load_spec(corpus.spec(TLS))
    spec = model.load_spec(corpus.spec(corpus.ERA_A)).model_copy(update={"security": with_tls.security})
    ctx = render_context.build_context(spec, "db")
    with pytest.raises(ValueError, match=r"spec\.security\.grpcTLS"):
        era_a.pool_containers(ctx, next(iter(spec.pools)), "zone1", "x")


@pytest.mark.parametrize(("tls", "field"), [
    ({}, "spec.security.grpcTLS.secretName"),
    ({"secretName": "Bad_Name"}, "spec.security.grpcTLS.secretName"),
    ({"secretName": "ok", "serverName": "not a name"}, "spec.security.grpcTLS.serverName"),
    ({"secretName": "ok", "ca": "x"}, "spec.security.grpcTLS.ca"),
])
def test_bad_values_are_refused_naming_the_field(tls, field):
    with pytest.raises(model.SpecError) as info:
        model.load_spec(corpus.spec({"security": {"grpcTLS": tls}}))
    assert field in str(info.value)


def test_the_install_bundle_gives_the_agent_the_secret_and_its_client_flags():
    agent = yaml.safe_load(bundle.files(agent_grpc_tls_secret="agent-grpc-tls")["agent-deployment.yaml"])
    pod = agent["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert [a for a in container["args"] if a.startswith("--grpc-")] == [
        "--grpc-cert=/certs/grpc/tls.crt", "--grpc-key=/certs/grpc/tls.key", "--grpc-ca=/certs/grpc/ca.crt"]
    assert MOUNT in container["volumeMounts"]
    assert {"name": "grpc-tls", "secret": {"secretName": "agent-grpc-tls", "defaultMode": 0o440}} in pod["volumes"]
    operator = yaml.safe_load(bundle.files(agent_grpc_tls_secret="agent-grpc-tls")["operator-deployment.yaml"])
    assert not [a for a in operator["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--grpc-")]
    plain = yaml.safe_load(bundle.files()["agent-deployment.yaml"])["spec"]["template"]["spec"]
    assert all(v["name"] != "grpc-tls" for v in plain["volumes"])


def test_the_agent_secret_name_is_checked(tmp_path, capsys):
    from multigres_pools import cli
    assert cli.main(["install-bundle", "-o", str(tmp_path / "out"), "--agent-grpc-tls-secret", "Bad_Name"]) != 0
    assert "--agent-grpc-tls-secret 'Bad_Name'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
