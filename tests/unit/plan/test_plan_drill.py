"""The restore drill (plan/drill.py, render/drill.py, state/drill.py): when a drill starts, what its pod
is, how its end is read and recorded, and what the status and conditions say. Run for real on
Multigres v0.1.0 in tests/integration/multigres/repository/test_restore_on_multigres.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import drill
from ansible_collections.multigres.pools.plugins.module_utils.state.observed import with_writes
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from tests import render_corpus as corpus

from .plan_factories import NOW, SID, desired, events, healthy, observed, plan, shard_cr

BACKUP = "20260501-110000F"
POD = naming.restore_drill_pod_name(SID)
HEALTH = {keys.ANN_BACKUP_HEALTH: json.dumps({"healthy": True, "lastBackupId": BACKUP})}


def _rendered(verify: dict[str, Any] | None = None, **backup: Any) -> Any:
    patch = {"backup": {"verify": verify if verify is not None else {"schedule": "0 3 * * *"}, **backup}}
    return render.desired_state(model.load_spec(corpus.spec(patch)), "db", owner={"name": "demo", "uid": "cr-uid-1"})


def _want(**verify: Any) -> Any:
    """The factories' desired state with the rendered drill of a spec with `verify`."""
    return dataclasses.replace(desired(), drill=_rendered(verify or {"schedule": "0 3 * * *"}).drill)


def _seen(annotations: dict[str, str], pod: dict[str, Any] | None = None, **backup_state: Any) -> Any:
    anns = dict(HEALTH) | annotations
    if backup_state:
        anns[keys.ANN_BACKUP_STATE] = json.dumps(backup_state)
    seen = observed(*healthy(desired().pools[0]), cr=shard_cr(annotations=anns))
    return dataclasses.replace(seen, drill_pod=pod)


def _record(result: Any) -> dict[str, Any]:
    (patch,) = [a for a in result.actions if a.kind == keys.SHARD_KIND and a.verb == "patch"]
    rec: dict[str, Any] = json.loads(patch.body["metadata"]["annotations"][keys.ANN_RESTORE_DRILL])
    return rec


def _running(**extra: Any) -> dict[str, str]:
    running = {"trigger": "request", "backupId": BACKUP, "startedAt": "2026-05-01T11:59:00Z", "pod": POD, **extra}
    return {keys.ANN_RESTORE_DRILL: json.dumps({"running": running})}


def _ended_pod(phase: str, code: int | None, message: str = "") -> dict[str, Any]:
    pod = _want().drill.pod(BACKUP)
    pod["metadata"] |= {"uid": "drill-uid", "resourceVersion": "5"}
    terminated = {"exitCode": code, "finishedAt": "2026-05-01T11:59:40Z", "message": message}
    pod["status"] = {"phase": phase, "containerStatuses": [
        {"name": keys.RESTORE_DRILL_CONTAINER, "state": {"terminated": terminated} if code is not None else {}}]}
    return pod


# --- the spec and the pod ---------------------------------------------------------------------------
def test_the_pod_restores_the_named_backup_read_only_and_is_no_pool_pod() -> None:
    pod = _rendered({"query": "SELECT count(*) FROM orders", "database": "shop"}).drill.pod(BACKUP)
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == POD and meta["labels"][keys.LABEL_APP_COMPONENT] == keys.COMPONENT_RESTORE_DRILL
    assert meta["ownerReferences"][0]["uid"] == "cr-uid-1" and meta["annotations"][keys.ANN_RESTORE_DRILL] == BACKUP
    (container,) = spec["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {drill.ENV_BACKUP: BACKUP, drill.ENV_QUERY: "SELECT count(*) FROM orders",
                   drill.ENV_DATABASE: "shop", drill.ENV_USER: "postgres"}
    repo = next(m for m in container["volumeMounts"] if m["mountPath"] == "/backups")
    claim = next(v for v in spec["volumes"] if "persistentVolumeClaim" in v)["persistentVolumeClaim"]
    assert repo["readOnly"] and claim == {"claimName": naming.shard_backup_pvc_name(SID), "readOnly": True}
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    scratch = next(v for v in spec["volumes"] if "emptyDir" in v)["emptyDir"]
    assert scratch == {"sizeLimit": model.load_spec(corpus.spec({})).pools["default"].storage.size}
    assert container["securityContext"]["runAsNonRoot"] and "ports" not in container
    # The user's query reaches psql as a value, never as shell text.
    assert "SELECT count" not in container["command"][2] and '--command="$DRILL_QUERY"' in container["command"][2]
    # ReadWriteOnce (the default): beside the pool pods, where the volume is attached.
    (term,) = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["labelSelector"]["matchLabels"][keys.LABEL_APP_COMPONENT] == keys.COMPONENT_POOL
    shared = _rendered(filesystem={"storage": {"accessModes": ["ReadWriteMany"]}}).drill.pod(BACKUP)
    assert "affinity" not in shared["spec"]


def test_no_drill_without_verify_and_bad_verify_settings_are_refused_by_field() -> None:
    assert render.desired_state(model.load_spec(corpus.spec({})), "db").drill is None
    cases = {"spec.backup.verify.timeout": {"verify": {"timeout": "0s"}},
             "spec.backup.verify.schedule": {"verify": {"schedule": "every day"}},
             "spec.backup.verify.query": {"verify": {"query": ""}},
             "spec.backup.verify.database": {"verify": {"database": "host=elsewhere dbname=x"}}}
    for path, backup in cases.items():
        with pytest.raises(model.SpecError) as err:
            model.load_spec(corpus.spec({"backup": backup}))
        assert path in str(err.value), (path, str(err.value))


def test_an_s3_drill_reads_the_bucket_with_the_pods_credentials_and_mounts_no_backup_volume(tmp_path: Path) -> None:
    s3 = {"type": "s3", "s3": {"bucket": "bkt", "region": "eu-west-1", "endpoint": "10.0.0.1:9000",
                               "keyPrefix": "db/demo", "credentialsSecret": "aws"}, "verify": {}}
    planned = render.desired_state(model.load_spec(corpus.spec({"backup": s3})), "db").drill
    assert planned is not None
    pod = planned.pod(BACKUP)
    (container,) = pod["spec"]["containers"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["drill"] and "affinity" not in pod["spec"]
    assert [m["name"] for m in container["volumeMounts"]] == ["drill"]
    env = {e["name"]: e for e in container["env"]}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "aws"
    # Run under its own `set -u` with only the Secret's variables set (no session token, no IRSA), the
    # scratch directory moved into tmp_path and a pgbackrest that records what it got and fails.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pgbackrest").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\n'
                                        f'echo "$PGBACKREST_REPO1_S3_KEY" > {tmp_path}/key\nexit 1\n')
    (bin_dir / "pgbackrest").chmod(0o755)
    script = container["command"][-1].replace(drill.DATA, str(tmp_path / "drill"))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "S",
           drill.ENV_BACKUP: BACKUP}
    done = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == drill.EXIT_RESTORE, done
    args = (tmp_path / "args").read_text().split()
    assert {"--repo1-type=s3", "--repo1-path=/db/demo/multigres", "--repo1-s3-key-type=shared",
            f"--set={BACKUP}", "restore"} <= set(args), args
    assert (tmp_path / "key").read_text().strip() == "AKID"


# --- starting -------------------------------------------------------------------------------------
def test_a_request_starts_a_drill_of_the_newest_backup_and_is_removed() -> None:
    result = plan(_want(), _seen({keys.ANN_RESTORE_DRILL_REQUEST: "now"}), NOW)
    (patch,) = [a for a in result.actions if a.kind == keys.SHARD_KIND and a.verb == "patch"]
    assert patch.body["metadata"]["annotations"][keys.ANN_RESTORE_DRILL_REQUEST] is None
    assert _record(result)["running"] == {"trigger": "request", "backupId": BACKUP, "startedAt": "2026-05-01T12:00:00Z",
                                          "pod": POD}
    (create,) = [a for a in result.actions if a.kind == "Pod" and a.verb == "apply"]
    assert create.name == POD and create.body["metadata"]["annotations"][keys.ANN_RESTORE_DRILL] == BACKUP
    assert "RestoreDrillStarted" in events(result) and 0 < result.drill.requeue_after <= 10
    # The record is written before the pod exists (a pass that dies in between is finished by the next).
    assert patch.phase < create.phase


def test_a_schedule_is_noted_first_then_runs_once_per_due_time() -> None:
    first = plan(_want(), _seen({}), NOW)
    assert _record(first) == {"handled": "2026-05-01T03:00:00Z"} and not [a for a in first.actions if a.kind == "Pod"]
    assert first.drill.requeue_after == 15 * 3600  # until 03:00 tomorrow
    noted = {keys.ANN_RESTORE_DRILL: json.dumps({"handled": "2026-05-01T03:00:00Z"})}
    assert not plan(_want(), _seen(noted), NOW).drill.actions
    later = NOW + dt.timedelta(days=1)
    due = plan(_want(), _seen(noted), later)
    rec = _record(due)
    assert rec["handled"] == "2026-05-02T03:00:00Z" and rec["running"]["trigger"] == "schedule"
    # Missed days collapse into one drill.
    assert _record(plan(_want(), _seen(noted), NOW + dt.timedelta(days=5)))["handled"] == "2026-05-06T03:00:00Z"


def test_the_drill_takes_the_newest_backup_the_agent_saw_or_ran() -> None:
    assert drill.newest(["20260501-010000F", "20260501-010000F_20260501-090000D", "20260430-230000F"]) == \
        "20260501-010000F_20260501-090000D"
    ran = {"backupId": "20260501-115500F", "finishedAt": "2026-05-01T11:56:00Z"}
    result = plan(_want(), _seen({keys.ANN_RESTORE_DRILL_REQUEST: "x"}, last=ran), NOW)
    assert _record(result)["running"]["backupId"] == "20260501-115500F"
    failed = _seen({keys.ANN_RESTORE_DRILL_REQUEST: "x"}, last={**ran, "error": "boom"})
    assert _record(plan(_want(), failed, NOW))["running"]["backupId"] == BACKUP


def test_a_drill_waits_for_a_running_backup_and_fails_without_a_known_backup() -> None:
    waiting = plan(_want(), _seen({keys.ANN_RESTORE_DRILL_REQUEST: "x"}, running={"pod": "p"}), NOW)
    assert not waiting.drill.actions and waiting.drill.requeue_after > 0
    no_backup = _seen({keys.ANN_RESTORE_DRILL_REQUEST: "x"})
    no_backup = dataclasses.replace(no_backup, cr=shard_cr(annotations={keys.ANN_RESTORE_DRILL_REQUEST: "x"}))
    result = plan(_want(), no_backup, NOW)
    last = _record(result)["last"]
    assert last["result"] == "Failed" and last["reason"] == "NoBackup"
    assert "BackupVerificationFailed" in events(result) and not [a for a in result.actions if a.kind == "Pod"]


# --- ending ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("phase", "code", "verified", "reason"), [
    ("Succeeded", 0, True, "Verified"),
    ("Failed", drill.EXIT_RESTORE, False, "RestoreFailed"),
    ("Failed", drill.EXIT_START, False, "PostgresDidNotStart"),
    ("Failed", drill.EXIT_QUERY, False, "QueryFailed"),
    ("Failed", 137, False, "Unexpected"),
    ("Failed", None, False, "Unexpected"),
])
def test_an_ended_pod_is_recorded_and_deleted(phase: str, code: int | None, verified: bool, reason: str) -> None:
    pod = _ended_pod(phase, code, "restore-drill: the query failed: relation \"orders\" does not exist")
    result = plan(_want(), _seen(_running(), pod), NOW)
    rec = _record(result)
    assert "running" not in rec and rec["last"]["reason"] == reason and rec["last"]["backupId"] == BACKUP
    assert rec["last"]["result"] == ("Verified" if verified else "Failed")
    assert ("lastVerified" in rec) is verified
    assert [(a.verb, a.name) for a in result.actions if a.kind == "Pod"] == [("delete", POD)]
    assert ("BackupVerified" if verified else "BackupVerificationFailed") in events(result)
    if not verified and code is not None:
        assert "does not exist" in rec["last"]["message"]


def test_a_pod_the_kubelet_evicted_says_why() -> None:
    pod = _ended_pod("Failed", 137)
    pod["status"] |= {"reason": "Evicted", "message": "Usage of EmptyDir volume \"drill\" exceeds the limit \"1Gi\"."}
    last = _record(plan(_want(), _seen(_running(), pod), NOW))["last"]
    assert last["reason"] == "Unexpected" and "Evicted: Usage of EmptyDir volume" in last["message"], last


def test_a_drill_past_its_timeout_fails_and_a_lost_or_stray_pod_is_handled() -> None:
    running_pod = _ended_pod("Running", None)
    running_pod["status"] = {"phase": "Running"}
    assert not plan(_want(), _seen(_running(), running_pod), NOW).drill.actions
    late = plan(_want(timeout="30s"), _seen(_running(), running_pod), NOW)
    assert _record(late)["last"]["reason"] == "Timeout" and writes_of(late) == [("delete", POD)]
    # Created a moment ago and not seen yet: wait; a minute later: lost.
    assert not plan(_want(), _seen(_running(startedAt="2026-05-01T11:59:50Z")), NOW).drill.actions
    assert _record(plan(_want(), _seen(_running()), NOW + dt.timedelta(minutes=2)))["last"]["reason"] == "PodLost"
    # A drill pod while no drill runs (the pass that recorded its end died before the delete).
    stray = plan(_want(), _seen({}, _ended_pod("Succeeded", 0)), NOW)
    assert writes_of(stray) == [("delete", POD)]
    # verify removed from the spec while a drill runs: the drill is cancelled and its pod deleted.
    cancelled = plan(desired(), _seen(_running(), running_pod), NOW)
    assert _record(cancelled)["last"]["reason"] == "Cancelled" and writes_of(cancelled) == [("delete", POD)]


def writes_of(result: Any) -> list[tuple[str, str]]:
    return [(a.verb, a.name) for a in result.actions if a.kind == "Pod"]


# --- the status -------------------------------------------------------------------------------------
def test_status_shows_the_drills_and_backup_verified_follows_the_last_one() -> None:
    want = _want()
    seen = _seen(_running(), _ended_pod("Succeeded", 0))
    result = plan(want, seen, NOW)
    (patch,) = [a for a in result.actions if a.kind == keys.SHARD_KIND and a.verb == "patch"]
    cr = json.loads(json.dumps(seen.cr))
    cr["metadata"]["annotations"] |= patch.body["metadata"]["annotations"]
    after = with_writes(seen, [("patch", keys.SHARD_KIND, "demo", cr), ("delete", "Pod", POD, None)])
    assert after.drill_pod is None and len(after.pods) == len(seen.pods)
    out = status.compute(want, after, plan(want, after, NOW), stamp="2026-05-01T12:00:00Z")
    assert out["backup"]["lastVerified"] == "2026-05-01T11:59:40Z"
    assert out["backup"]["drill"]["last"]["result"] == "Verified"
    verified = next(c for c in out["conditions"] if c["type"] == keys.ShardCondition.BACKUP_VERIFIED)
    assert verified["status"] == "True" and BACKUP in verified["message"]
    failed = _seen({keys.ANN_RESTORE_DRILL: json.dumps({"lastVerified": "2026-04-30T03:00:40Z", "last": {
        "result": "Failed", "reason": "QueryFailed", "message": "m", "trigger": "schedule", "backupId": BACKUP}})})
    out = status.compute(want, failed, plan(want, failed, NOW), stamp="2026-05-01T12:00:00Z")
    verified = next(c for c in out["conditions"] if c["type"] == keys.ShardCondition.BACKUP_VERIFIED)
    assert (verified["status"], verified["reason"]) == ("False", "QueryFailed")
    assert out["backup"]["lastVerified"] == "2026-04-30T03:00:40Z"  # the last success stays
    plain = _seen({})
    out = status.compute(desired(), plain, plan(desired(), plain, NOW), stamp="2026-05-01T12:00:00Z")
    assert keys.ShardCondition.BACKUP_VERIFIED not in {c["type"] for c in out["conditions"]}
