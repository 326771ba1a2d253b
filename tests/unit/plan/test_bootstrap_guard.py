"""The bootstrap guard (state/bootstrap.py): a shard that recorded a backup never starts anew over an empty
repository. The evidence, the resolved pod annotation, the init container's script (run here against a
stand-in pgbackrest), the planner's marks and the condition BootstrapRefused with its events."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import bootstrap, facts, repository
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import BootstrapGuard
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from tests import render_corpus as corpus

from .plan_factories import NOW, desired, desired_pool, healthy, live_pod, observed, plan, shard_cr

B = keys.Bootstrap
BACKUP_PVC = "backup-data-demo"
GUARD = BootstrapGuard(mode=B.AUTO, backup_pvc=BACKUP_PVC, repository=repository.posix("/backups"))
BACKUP_ID = "20261127-101500F"
WITH_BACKUP = {"backup": {"last": {"backupId": BACKUP_ID, "type": "full", "trigger": "request"}}}


def _backup_pvc(annotations: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": BACKUP_PVC, "namespace": "db", "uid": "bpvc", "resourceVersion": "4",
                         "annotations": {keys.ANN_OWNER_SHARD: "demo", **(annotations or {})}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


# --- evidence and resolution --------------------------------------------------------------------
def test_evidence_comes_from_the_status_then_the_health_check_then_the_backup_pvc() -> None:
    assert bootstrap.recorded_backup(shard_cr(status=WITH_BACKUP), _backup_pvc()) == BACKUP_ID
    health = {"lastBackupTime": "2026-11-27T10:15:00Z", "lastBackupType": "full"}
    assert bootstrap.recorded_backup(shard_cr(status=health), None) == "full backup of 2026-11-27T10:15:00Z"
    marked = _backup_pvc({keys.ANN_BACKUP_RECORDED: "20261120-010000F"})
    assert bootstrap.recorded_backup(shard_cr(), marked) == "20261120-010000F"
    assert bootstrap.recorded_backup(None, marked) == "20261120-010000F"  # the shard re-created without status
    failed = {"backup": {"last": {"error": "boom", "type": "full"}}}
    assert bootstrap.recorded_backup(shard_cr(status=failed), _backup_pvc()) is None
    assert bootstrap.recorded_backup(None, None) is None


@pytest.mark.parametrize(("mode", "recorded", "want"), [
    (B.AUTO, None, B.INITDB), (B.AUTO, BACKUP_ID, B.RECOVERY),
    (B.INITDB, BACKUP_ID, B.INITDB), (B.RECOVERY, None, B.RECOVERY),
])
def test_auto_turns_into_recovery_once_a_backup_was_recorded(mode: str, recorded: str | None, want: str) -> None:
    assert bootstrap.effective(mode, recorded) is want


# --- the init container's script ------------------------------------------------------------------
EMPTY_STANZA = ('[{"archive":[],"backup":[],"name":"multigres","status":{"code":1,'
                '"message":"missing stanza path"}}]')
WITH_BACKUPS = '[{"archive":[{"id":"17-1"}],"backup":[{"label":"' + BACKUP_ID + '","type":"full"}],"name":"multigres"}]'


def _run(tmp_path: Path, bootstrap_value: str | None, *, pg_version: bool = False, info: str = "",
         info_exit: int = 0, overrides: dict | None = None,
         extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The rendered repository-check command, with PGDATA in tmp_path and `pgbackrest` a stand-in that
    records its arguments (`args`) and the S3 keys it was given (`keys`), and prints `info`."""
    spec = render.desired_state(model.load_spec(corpus.spec(overrides or {})), "db").pools[0].pod(0)["spec"]
    check = next(c for c in spec["initContainers"] if c["name"] == keys.REPOSITORY_CHECK_CONTAINER)
    pgdata, bin_dir = tmp_path / "pg_data", tmp_path / "bin"
    pgdata.mkdir(parents=True)
    bin_dir.mkdir()
    if pg_version:
        (pgdata / "PG_VERSION").write_text("17\n")
    fake = bin_dir / "pgbackrest"
    fake.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\n'
                    f'echo "$PGBACKREST_REPO1_S3_KEY $PGBACKREST_REPO1_S3_KEY_SECRET" > {tmp_path}/keys\n'
                    f'printf %s \'{info}\'\nexit {info_exit}\n')
    fake.chmod(0o755)
    env = {"PGDATA": str(pgdata), "PATH": f"{bin_dir}:/usr/bin:/bin", **(extra_env or {})}
    if bootstrap_value is not None:
        env[bootstrap.ENV_BOOTSTRAP] = bootstrap_value
    return subprocess.run(check["command"], env=env, capture_output=True, text=True, timeout=10, check=False)


def test_the_check_refuses_an_empty_repository_when_a_backup_is_expected(tmp_path: Path) -> None:
    done = _run(tmp_path, B.RECOVERY, info=EMPTY_STANZA)
    assert done.returncode == bootstrap.EXIT_NO_BACKUP, done
    assert "refused" in done.stderr and "missing stanza path" in done.stderr
    args = (tmp_path / "args").read_text().split()
    assert "info" in args and "--stanza=multigres" in args and "--repo1-path=/backups" in args


def test_the_check_lets_a_restore_start(tmp_path: Path) -> None:
    assert _run(tmp_path, B.RECOVERY, info=WITH_BACKUPS).returncode == 0


def test_a_failing_pgbackrest_holds_the_pod_too(tmp_path: Path) -> None:
    done = _run(tmp_path, B.RECOVERY, info="ERROR: [041]: unable to open", info_exit=41)
    assert done.returncode == bootstrap.EXIT_UNREADABLE and "unable to open" in done.stderr


@pytest.mark.parametrize("value", [None, "", "auto", "bogus"])
def test_without_initdb_in_the_annotation_a_backup_is_required(tmp_path: Path, value: str | None) -> None:
    """Fail closed: a missing or unknown annotation never lets initdb run over an empty repository."""
    assert _run(tmp_path, value, info=EMPTY_STANZA).returncode == bootstrap.EXIT_NO_BACKUP


def test_initdb_and_a_data_directory_that_exists_are_let_through_without_reading_the_repository(
        tmp_path: Path) -> None:
    assert _run(tmp_path, B.INITDB, info_exit=41).returncode == 0
    assert not (tmp_path / "args").exists()
    assert list((tmp_path / "pg_data").iterdir()) == []  # an empty data directory is left to initdb
    os.remove(tmp_path / "bin" / "pgbackrest")
    (tmp_path / "bin").rmdir()
    (tmp_path / "pg_data").rmdir()
    assert _run(tmp_path, B.RECOVERY, pg_version=True, info_exit=41).returncode == 0
    assert not (tmp_path / "args").exists()
    assert (tmp_path / "pg_data" / layout.STANDBY_SIGNAL).is_file()  # one that ran starts in recovery


def test_the_check_mounts_the_repository_read_only_and_reads_the_annotation() -> None:
    spec = render.desired_state(model.load_spec(corpus.spec()), "db").pools[0].pod(0)
    check = next(c for c in spec["spec"]["initContainers"] if c["name"] == keys.REPOSITORY_CHECK_CONTAINER)
    data, *repository = check["volumeMounts"]
    assert data["name"] == layout.VOL_DATA and not data.get("readOnly")  # for the standby signal
    assert repository and all(m["readOnly"] for m in repository)
    (env,) = [e for e in check["env"] if e["name"] == bootstrap.ENV_BOOTSTRAP]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.annotations['{keys.ANN_BOOTSTRAP}']"
    assert spec["metadata"]["annotations"][keys.ANN_BOOTSTRAP] == B.INITDB  # render alone: auto, no evidence


S3 = {"backup": {"type": "s3", "s3": {"bucket": "bkt", "region": "eu-west-1", "endpoint": "10.0.0.1:9000",
                                     "keyPrefix": "db/demo/", "credentialsSecret": "aws"}}}


def test_s3_repositories_are_checked_with_the_pods_credentials_and_no_volume() -> None:
    desired_s3 = render.desired_state(model.load_spec(corpus.spec(S3)), "db")
    pod = desired_s3.pools[0].pod(0)
    check = next(c for c in pod["spec"]["initContainers"] if c["name"] == keys.REPOSITORY_CHECK_CONTAINER)
    assert [m["name"] for m in check["volumeMounts"]] == [layout.VOL_DATA]
    env = {e["name"]: e for e in check["env"]}
    assert env["AWS_REGION"]["value"] == "eu-west-1"
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "aws", "key": "AWS_ACCESS_KEY_ID"}
    assert desired_s3.bootstrap is not None and desired_s3.bootstrap.backup_pvc is None
    assert desired_s3.bootstrap.repository.location == "s3://bkt/db/demo/multigres"
    assert pod["metadata"]["annotations"][keys.ANN_BOOTSTRAP] == B.INITDB
    assert model.load_spec(corpus.spec({"backup": {**S3["backup"], "bootstrap": "recovery"}}))
    with pytest.raises(model.SpecError) as unknown:
        model.load_spec(corpus.spec({"backup": {"bootstrap": "restore"}}))
    assert "spec.backup.bootstrap" in str(unknown.value)


def test_the_s3_check_names_the_repository_as_v0_1_0_does(tmp_path: Path) -> None:
    """go/common/backup/config.go: a custom endpoint path-style and unverified, repo1-path
    /<keyPrefix>/multigres, key type shared with the pods' AWS_* variables."""
    done = _run(tmp_path, B.RECOVERY, info=EMPTY_STANZA, overrides=S3,
                extra_env={"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET"})
    assert done.returncode == bootstrap.EXIT_NO_BACKUP, done
    args = (tmp_path / "args").read_text().split()
    assert {"--repo1-type=s3", "--repo1-s3-bucket=bkt", "--repo1-s3-region=eu-west-1",
            "--repo1-s3-endpoint=10.0.0.1:9000", "--repo1-s3-uri-style=path", "--no-repo1-storage-verify-tls",
            "--repo1-path=/db/demo/multigres", "--repo1-s3-key-type=shared", "--stanza=multigres"} <= set(args), args
    assert (tmp_path / "keys").read_text().split() == ["AKID", "SECRET"]
    assert _run(tmp_path / "again", B.RECOVERY, info=WITH_BACKUPS, overrides=S3).returncode == 0


IRSA = {"AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn"}


@pytest.mark.parametrize(("irsa", "key_type"), [({}, "auto"), (IRSA, "web-id")])
def test_without_a_secret_the_s3_check_takes_the_key_type_v0_1_0_would(tmp_path: Path, irsa: dict[str, str],
                                                                      key_type: str) -> None:
    aws = {"backup": {"type": "s3", "s3": {"bucket": "bkt", "region": "eu-west-1"}}}
    _run(tmp_path, B.RECOVERY, info=EMPTY_STANZA, overrides=aws, extra_env=irsa)
    args = (tmp_path / "args").read_text().split()
    assert {f"--repo1-s3-key-type={key_type}", "--repo1-s3-endpoint=s3.eu-west-1.amazonaws.com",
            "--repo1-s3-uri-style=host", "--repo1-path=/multigres"} <= set(args), args
    assert "--no-repo1-storage-verify-tls" not in args
    assert (tmp_path / "keys").read_text().split() == []


def test_the_bootstrap_annotation_is_no_part_of_the_spec_hash() -> None:
    auto = render.desired_state(model.load_spec(corpus.spec()), "db").pools[0]
    recovery = render.desired_state(model.load_spec(corpus.spec({"backup": {"bootstrap": "recovery"}})), "db").pools[0]
    assert auto.spec_hash == recovery.spec_hash
    assert recovery.pod(0)["metadata"]["annotations"][keys.ANN_BOOTSTRAP] == B.RECOVERY


# --- the planner ------------------------------------------------------------------------------------
def _guarded(mode: str = B.AUTO):  # type: ignore[no-untyped-def]
    dp = desired_pool()
    return dp, dataclasses.replace(desired(dp, objects=(_backup_pvc(),)),
                                   bootstrap=dataclasses.replace(GUARD, mode=mode))


def _pod_bootstrap(result, name: str) -> str | None:  # type: ignore[no-untyped-def]
    bodies = [a.body for a in result.actions if a.kind == "Pod" and a.name == name and a.verb in ("apply", "patch")]
    return next((((b or {}).get("metadata") or {}).get("annotations") or {}).get(keys.ANN_BOOTSTRAP)
                for b in bodies)


def test_pods_created_after_a_recorded_backup_must_restore_and_the_backup_pvc_keeps_the_fact() -> None:
    dp, want = _guarded()
    pods, pvcs = healthy(dp, 2)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_BOOTSTRAP] = B.RECOVERY
    seen = observed(pods, [*pvcs, _backup_pvc()], cr=shard_cr(status=WITH_BACKUP))
    result = plan(want, seen, NOW)
    assert _pod_bootstrap(result, dp.pod(2)["metadata"]["name"]) == B.RECOVERY
    (mark,) = [a for a in result.actions if a.kind == "PersistentVolumeClaim" and a.name == BACKUP_PVC]
    assert mark.body["metadata"]["annotations"][keys.ANN_BACKUP_RECORDED] == BACKUP_ID


def test_before_any_backup_a_new_shard_may_initdb_and_live_pods_follow_the_evidence_in_place() -> None:
    dp, want = _guarded()
    assert _pod_bootstrap(plan(want, observed(cr=shard_cr()), NOW), dp.pod(0)["metadata"]["name"]) == B.INITDB
    pods, pvcs = healthy(dp)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_BOOTSTRAP] = B.INITDB
    result = plan(want, observed(pods, [*pvcs, _backup_pvc()], cr=shard_cr(status=WITH_BACKUP)), NOW)
    patched = [a for a in result.actions if a.kind == "Pod"]
    assert {a.verb for a in patched} == {"patch"} and len(patched) == 3  # annotations only, no replacement
    assert {a.body["metadata"]["annotations"][keys.ANN_BOOTSTRAP] for a in patched} == {B.RECOVERY}


def test_initdb_in_the_spec_wins_over_the_evidence_and_a_mark_is_never_dropped() -> None:
    dp, want = _guarded(B.INITDB)
    seen = observed(cr=shard_cr(status={}), pvcs=[_backup_pvc({keys.ANN_BACKUP_RECORDED: BACKUP_ID})])
    result = plan(want, seen, NOW)
    assert _pod_bootstrap(result, dp.pod(0)["metadata"]["name"]) == B.INITDB
    assert not [a for a in result.actions if a.kind == "PersistentVolumeClaim" and a.name == BACKUP_PVC]


# --- the condition ------------------------------------------------------------------------------------
def _held(pod: dict, code: int) -> dict:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["status"]["initContainerStatuses"] = [{
        "name": keys.REPOSITORY_CHECK_CONTAINER, "ready": False, "restartCount": 2,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
        "lastState": {"terminated": {"exitCode": code, "reason": "Error"}}}]
    return pod


def _status(pods, cr):  # type: ignore[no-untyped-def]
    _, want = _guarded()
    seen = observed(pods, [_backup_pvc()], cr=cr)
    return status.compute(want, seen, plan(want, seen, NOW), stamp=facts.format_time(NOW)), cr


def test_held_pods_make_the_shard_degraded_with_the_reason_and_what_to_do() -> None:
    dp, _ = _guarded()
    pods = [_held(live_pod(dp, i), bootstrap.EXIT_NO_BACKUP) for i in range(2)]
    st, cr = _status(pods, shard_cr(status=WITH_BACKUP))
    cond = {c["type"]: c for c in st["conditions"]}[keys.ShardCondition.BOOTSTRAP_REFUSED]
    names = ", ".join(facts.name(p) for p in pods)
    assert cond["status"] == "True" and cond["reason"] == bootstrap.REASON_NO_BACKUP
    assert cond["message"].startswith(f"{names}: the backup repository (PVC {BACKUP_PVC} at /backups) holds no "
                                      f"complete backup although the shard recorded backup {BACKUP_ID}")
    assert "spec.backup.bootstrap: initdb" in cond["message"] and st["phase"] == "Degraded"
    assert bootstrap.subjects(cond["message"]) == {facts.name(p) for p in pods}
    (warning,) = [e for e in status.transition_events(cr, cr["status"], st) if e.event_reason == "BootstrapRefused"]
    assert warning.event_type == "Warning" and warning.reason == cond["message"]
    # Unchanged pods: no second warning. The check passing (a restored repository): cleared, Normal event.
    assert not [e for e in status.transition_events(cr, st, st) if e.event_reason == "BootstrapRefused"]
    for pod in pods:
        pod["status"]["initContainerStatuses"][0]["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    after, _ = _status(pods, shard_cr(status=WITH_BACKUP))
    assert {c["type"]: c for c in after["conditions"]}[keys.ShardCondition.BOOTSTRAP_REFUSED]["status"] == "False"
    assert [e.event_type for e in status.transition_events(cr, st, after)
            if e.event_reason == "BootstrapAllowed"] == ["Normal"]


def test_an_unreadable_repository_is_named_and_other_exit_codes_are_not_refusals() -> None:
    dp, _ = _guarded()
    st, _ = _status([_held(live_pod(dp, 0), bootstrap.EXIT_UNREADABLE)], shard_cr(status=WITH_BACKUP))
    cond = {c["type"]: c for c in st["conditions"]}[keys.ShardCondition.BOOTSTRAP_REFUSED]
    assert cond["reason"] == bootstrap.REASON_UNREADABLE and "pgbackrest info failed" in cond["message"]
    st, _ = _status([_held(live_pod(dp, 0), 1)], shard_cr(status=WITH_BACKUP))
    assert {c["type"]: c for c in st["conditions"]}[keys.ShardCondition.BOOTSTRAP_REFUSED]["status"] == "False"
