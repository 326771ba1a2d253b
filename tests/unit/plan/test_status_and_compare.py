"""Status (kstatus + the seed's fields), the 'already applied' comparison, and kubeconfig loading."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import client as kube
from ansible_collections.multigres.pools.plugins.module_utils.plan import compare
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import MultigresShardStatus
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, live_pod, observed, plan, shard_cr

STAMP = "2026-05-01T12:00:00Z"


def _conditions(st: dict) -> dict:
    return {c["type"]: c for c in st["conditions"]}


def test_converged_shard_is_healthy_and_ready():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr())
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    cond = _conditions(st)
    assert st["phase"] == "Healthy" and st["readyReplicas"] == 3 and st["poolsReady"] is True
    assert st["observedGeneration"] == 3 and st["cells"] == ["z1"]
    assert sorted(st["podRoles"].values()) == ["PRIMARY", "REPLICA", "REPLICA"]
    assert cond["Ready"]["status"] == "True" and cond["Reconciling"]["status"] == "False"
    assert cond["Stalled"]["status"] == "False" and cond["Available"]["reason"] == "AllPodsReady"
    assert cond["RollingUpdate"]["message"] == "3/3 pods updated"


def test_a_shard_whose_pods_are_all_replicas_is_not_healthy():
    """Every pod Ready and REPLICA: nothing accepts writes (multiorch has elected no primary, as after a
    restore whose rule names another shard's cohort). Not Healthy, and the message says why; pods with no
    role yet (no agent) say nothing either way, and a primary makes it Healthy again."""
    dp = desired_pool()
    pods, pvcs = healthy(dp, primary=-1)
    obs = observed(pods, pvcs, cr=shard_cr())
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    cond = _conditions(st)
    assert st["phase"] == "Progressing" and cond["Ready"]["status"] == "False"
    assert st["message"].startswith("no primary: the agent reads all 3 serving pool pods as REPLICA"), st["message"]
    assert cond["Available"]["status"] == "True"  # the pods themselves are ready
    for pod in pods:
        del pod["metadata"]["labels"][keys.LABEL_ROLE]

    def phase() -> str:
        obs = observed(pods, pvcs, cr=shard_cr())
        return str(status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)["phase"])

    assert phase() == "Healthy"
    pods[1]["metadata"]["labels"][keys.LABEL_ROLE] = keys.Role.PRIMARY
    assert phase() == "Healthy"


def test_pod_roles_left_out_when_no_pod_has_one_and_that_is_a_change():
    """An empty podRoles would reach the API server as null (server-side apply, kubernetes#135841) and be
    refused; left out, the field is removed, and a status that had roles must still be rewritten."""
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr())
    with_roles = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    for pod in pods:
        del pod["metadata"]["labels"][keys.LABEL_ROLE]
    again = observed(pods, pvcs, cr=shard_cr(status=with_roles))
    without = status.compute(desired(dp), again, plan(desired(dp), again, NOW), stamp=STAMP)
    assert "podRoles" not in without
    assert status.changed(with_roles, without) and not status.changed(without, without)


def test_unchanged_status_keeps_transition_times_and_is_not_rewritten():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr())
    first = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    again_obs = observed(pods, pvcs, cr=shard_cr(status=first))
    second = status.compute(desired(dp), again_obs, plan(desired(dp), again_obs, NOW), stamp="2026-05-01T13:00:00Z")
    assert second == first and not status.changed(first, second)


def test_blocked_scale_down_and_empty_pool_raise_conditions_and_events_once():
    dp = desired_pool(replicas=1)
    pods, pvcs = healthy(dp, 3)
    pods[0] = live_pod(dp, 0, ready=False, role=keys.Role.PRIMARY)
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA)
    pods[2] = live_pod(dp, 2, ready=False, role=keys.Role.REPLICA)
    cr = shard_cr()
    obs = observed(pods, pvcs, cr=cr)
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    cond = _conditions(st)
    assert cond["ScaleDownBlocked"]["status"] == "True" and st["phase"] == "Degraded"
    assert cond["Available"]["reason"] == "PoolEmpty"
    assert [a.event_reason for a in status.transition_events(cr, {}, st)] == ["ScaleDownBlocked", "PoolEmpty"]
    assert status.transition_events(cr, st, st) == []


def test_backup_health_comes_from_the_agent_annotation():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    verdict = {"healthy": False, "reason": "BackupStale", "message": "Last full backup 9d ago",
               "lastBackupTime": "2026-04-22T01:00:00Z", "lastBackupType": "full"}
    obs = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_BACKUP_HEALTH: json.dumps(verdict)}))
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    backup = _conditions(st)["BackupHealthy"]
    assert (backup["status"], backup["reason"], backup["message"]) == ("False", "BackupStale", verdict["message"])
    assert st["lastBackupTime"] == "2026-04-22T01:00:00Z" and st["lastBackupType"] == "full"


def test_status_backup_comes_from_the_agents_backup_state_annotation():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    state = {"schedule": {"full": "2026-04-26T01:00:00Z", "differential": "2026-05-01T01:00:00Z"},
             "last": {"type": "differential", "trigger": "schedule", "pod": "p-1", "forcePrimary": False,
                      "jobId": "demo-differential-20260501T010001Z", "startedAt": "2026-05-01T01:00:01Z",
                      "finishedAt": "2026-05-01T01:00:09Z", "backupId": "20260426-010002F_20260501-010002D",
                      "sizeBytes": 1024},
             "waiting": "full backup waits: pod p-2 is draining"}
    obs = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_BACKUP_STATE: json.dumps(state)}))
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    assert st["backup"] == state
    MultigresShardStatus.model_validate(st)
    unreadable = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_BACKUP_STATE: "{"}))
    assert "backup" not in status.compute(desired(dp), unreadable, plan(desired(dp), unreadable, NOW), stamp=STAMP)


def test_compare_ignores_server_added_fields_and_normalises_quantities_and_secrets():
    live = {"metadata": {"name": "x", "uid": "u"}, "spec": {"cpu": "500m", "ports": [{"port": 1, "protocol": "TCP"}]},
            "data": {"k": base64.b64encode(b"v").decode()}}
    assert compare.difference(live, {"kind": "Secret", "metadata": {"name": "x"}, "stringData": {"k": "v"},
                                     "spec": {"cpu": "0.5", "ports": [{"port": 1}]}}) is None
    assert compare.difference(live, {"kind": "Secret", "stringData": {"k": "w"}}) == "data.k"
    assert compare.difference(live, {"kind": "X", "spec": {"ports": [{"port": 1}, {"port": 2}]}}) == "spec.ports"
    assert compare.difference(None, {"kind": "X"}) == "missing"


def test_kubeconfig_with_relative_files_token_file_and_a_second_file(tmp_path, monkeypatch):
    (tmp_path / "ca.crt").write_text("not used for http")
    (tmp_path / "token").write_text("secret-token\n")
    first = tmp_path / "a.yaml"
    first.write_text(json.dumps({"current-context": "ctx", "contexts": [
        {"name": "ctx", "context": {"cluster": "c", "user": "u"}}], "clusters": [], "users": [
        {"name": "u", "user": {"tokenFile": "token"}}]}))
    second = tmp_path / "b.yaml"
    second.write_text(json.dumps({"clusters": [
        {"name": "c", "cluster": {"server": "https://example.invalid:6443/", "certificate-authority": "ca.crt"}}]}))
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    creds = kube.load_credentials()
    assert creds.server == "https://example.invalid:6443"
    assert creds.ca_data == b"not used for http"
    assert creds.headers() == {"Authorization": "Bearer secret-token"}


def test_kubeconfig_exec_plugin_supplies_the_token(tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text("import json, os\n"
                      "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
                      "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
                      " 'status': {'token': 'from-' + os.environ['WHO']}}))\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = tmp_path / "config"
    config.write_text(json.dumps({"current-context": "x", "contexts": [{"name": "x", "context": {
        "cluster": "c", "user": "u"}}], "clusters": [{"name": "c", "cluster": {
            "server": "https://k.invalid", "insecure-skip-tls-verify": True}}], "users": [{"name": "u", "user": {
                "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                         "args": [str(plugin)], "env": [{"name": "WHO", "value": "plugin"}]}}}]}))
    creds = kube.load_credentials(str(config))
    assert creds.headers() == {"Authorization": "Bearer from-plugin"} and creds.insecure


@pytest.mark.parametrize(("content", "message"), [
    ("a: [unclosed", "cannot be read"),
    ("- a list", "not a kubeconfig"),
    ('{"contexts": []}', "has no current-context: choose one (kubectl config use-context NAME)"),
    ('{"current-context": "x", "contexts": []}', "has no context named 'x'"),
    ('{"current-context": "x", "contexts": [{"name": "x", "context": {"user": "u"}}]}',
     "context 'x' is incomplete (missing 'cluster')"),
    ('{"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c"}}], '
     '"clusters": [{"name": "c", "cluster": {}}]}', "context 'x' is incomplete (missing 'server')"),
])
def test_a_broken_kubeconfig_is_named_with_what_is_wrong(tmp_path, content, message):
    """Errors name the file and say what to do, in the words of kubectl, not of a module parameter."""
    config = tmp_path / "config"
    config.write_text(content)
    with pytest.raises(ValueError) as refused:
        kube.load_credentials(str(config))
    assert str(refused.value).startswith(f"kubeconfig {config}") and message in str(refused.value), refused.value


def test_every_status_field_the_engine_writes_is_declared_and_described_in_the_crd():
    """So `kubectl explain multigresshard.status` lists what the engine writes (not only preserved unknowns)."""
    from multigres_pools.install.crd import shard_crd

    verdict = {"healthy": True, "reason": "BackupRecent", "message": "ok", "lastBackupTime": "2026-05-01T11:00:00Z",
               "lastBackupType": "full"}
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_BACKUP_HEALTH: json.dumps(verdict)}))
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    (version,) = shard_crd()["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert "lastBackupTime" in st and "conditions" in st
    assert set(st) <= set(schema["properties"]), set(st) - set(schema["properties"])
    condition = schema["properties"]["conditions"]["items"]["properties"]
    assert {k for c in st["conditions"] for k in c} <= set(condition)
    assert all(p.get("description") for p in (*schema["properties"].values(), *condition.values()))
