"""Disaster recovery on real Multigres v0.1.0 (issue #25). First a restore drill on the healthy shard
(item 3): the newest backup restored into a throwaway pod, checked, thrown away, nothing written.
Then total loss (item 1): every pool pod and data PVC of a shard goes, the backup repository (the
shard's backup PVC) stays. The operator recreates the pods on empty volumes; the shard must come back
from the repository with every row acknowledged before the last backup, and every row acknowledged
before the last archived WAL segment. Prints the RPO (rows and seconds of acknowledged writes that did
not come back) and the RTO (loss to the first new write). Then the same loss with the repository
emptied as well: by itself v0.1.0 would bootstrap a new, empty shard; the bootstrap guard
(state/bootstrap.py) must hold every pod before PostgreSQL can initdb, say so on the MultigresShard,
write nothing to the repository, and let the shard come back once the repository does."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import bootstrap, facts

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.writeload import TABLE

from ..safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    finished_backup,
    lose_every_pool_pod_and_volume,
    note,
    request_backup,
    restore_drill,
    rows_present,
    shard_condition,
    shard_cr,
    shard_events,
    stop_restore_drills,
    switch_and_archive,
)
from .stack import ARCHIVE_TIMEOUT, REPLICAS

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]

FIELD_MANAGER = "restore-test"
# What the multipoolers and multiorch say about a restore and the election after it.
TELLING = ("MonitorPostgres", "restore", "Restore", "Recruited", "appoint", "promotion", "ShardInit")
RESTORED = "MonitorPostgres: successfully restored from backup"


def _backup_status(watched: Watched) -> dict[str, Any]:
    return ((shard_cr(watched.stack).get("status") or {}).get("backup")) or {}


def _take_backup(watched: Watched) -> dict[str, Any]:
    previous = (_backup_status(watched).get("last") or {}).get("startedAt", "")
    request_backup(watched.stack, "full", FIELD_MANAGER)
    last: dict[str, Any] = wait_for(lambda: finished_backup(watched.stack, "request", previous), 240,
                                    "the requested backup to finish", interval=1)
    assert not last.get("error"), last
    return last


def _archiver(watched: Watched) -> dict[str, Any]:
    stack = watched.stack
    primary = stack.primary_ip(SHARD)
    assert primary is not None
    with psycopg.connect(stack.dsn(primary, password=stack.password(SHARD)), connect_timeout=5) as conn:
        row = conn.execute("SELECT archived_count, last_archived_wal, failed_count, "
                           "current_setting('archive_mode'), current_setting('archive_timeout'), "
                           "pg_walfile_name(pg_current_wal_lsn()), "
                           "round(extract(epoch FROM now() - last_archived_time)::numeric, 1) "
                           "FROM pg_stat_archiver").fetchone()
    assert row is not None
    return dict(zip(("archived", "last_archived_wal", "failed", "archive_mode", "archive_timeout", "current_wal",
                     "seconds since the last archive"), row, strict=True))


def _lose_everything(watched: Watched, repository_aside: Path | None = None) -> float:
    """lose_every_pool_pod_and_volume; with `repository_aside`, the backup PVC's content is moved
    there as well (the claim stays, empty: a wrong or emptied repository)."""
    def empty_repository() -> None:
        assert repository_aside is not None
        repository_aside.mkdir()
        for entry in _repository(watched).iterdir():
            shutil.move(entry, repository_aside / entry.name)

    return lose_every_pool_pod_and_volume(watched, REPLICAS, empty_repository if repository_aside else None)


def _claims(watched: Watched, prefix: str) -> list[str]:
    kube = watched.stack.kube()
    try:
        return [facts.name(c) for c in kube.list("v1", "PersistentVolumeClaim", watched.stack.namespace)
                if facts.name(c).startswith(prefix)]
    finally:
        kube.close()


def _repository(watched: Watched) -> Path:
    """The backup PVC's directory on the host (the filesystem repository every pod mounts)."""
    stack = watched.stack
    assert stack.kubelet is not None
    (claim,) = _claims(watched, "backup-data-")
    return stack.kubelet.pvc_path(stack.namespace, claim)


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _logs(watched: Watched) -> dict[str, str]:
    """Every multipooler's and multiorch's log, by pod."""
    stack = watched.stack
    assert stack.kubelet is not None
    out: dict[str, str] = {}
    for component, container in ((keys.COMPONENT_POOL, "multipooler"), (keys.COMPONENT_MULTIORCH, "multiorch")):
        for pod in stack.pods(component):
            try:
                out[facts.name(pod)] = stack.kubelet.logs(stack.namespace, facts.name(pod), container)
            except FileNotFoundError as exc:
                out[facts.name(pod)] = str(exc)
    return out


def _telling(logs: dict[str, str]) -> dict[str, list[str]]:
    return {pod: [line[:300] for line in log.splitlines() if any(t in line for t in TELLING)][-20:]
            for pod, log in logs.items()}


def _field(line: str, name: str) -> str | None:
    try:
        value = json.loads(line).get(name)
    except ValueError:
        return None
    return None if value is None else str(value)


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time (ns)."""
    return {str(f.relative_to(root)): (f.stat().st_size, f.stat().st_mtime_ns) for f in root.rglob("*") if f.is_file()}


def test_a_restore_drill_verifies_the_newest_backup_writes_nothing_and_leaves_nothing(watched: Watched) -> None:
    """Item 3: the newest backup restored into a throwaway pod, PostgreSQL started in recovery, a user
    query answered; the result in the status, nothing written to the repository, nothing left behind.
    Then a query that fails: the drill says so (condition, event) and the last success stays. Then the
    same backup damaged in the repository: the drill fails at the restore and changes nothing else."""
    stack, load = watched.stack, watched.load
    load.wait_for_acks(50, timeout=120)
    acked = list(load.acked)[-100:]
    backup = _take_backup(watched)

    def seen_by_agent() -> bool:
        health = facts.json_annotation(shard_cr(stack), keys.ANN_BACKUP_HEALTH) or {}
        return health.get("lastBackupId") == backup["backupId"]

    wait_for(seen_by_agent, 60, "the agent's health check to see the backup", interval=1)
    repository = _repository(watched)
    before = _files(repository)
    since = backup["finishedAt"]
    started = time.monotonic()
    # The user's query proves the rows: it divides by zero unless every row acknowledged before the backup is there.
    ids = ",".join(map(str, acked))
    query = f"SELECT 1 / (count(*) = {len(acked)})::int FROM {TABLE} WHERE id IN ({ids})"
    last = restore_drill(stack, {"query": query}, since, FIELD_MANAGER)
    took = time.monotonic() - started
    note("restore drill", {**last, "seconds (request to pod gone)": round(took, 1)})
    assert (last["result"], last["reason"], last["backupId"]) == ("Verified", "Verified", backup["backupId"]), last
    status = _backup_status(watched)
    assert status["lastVerified"] == last["finishedAt"], status
    verified = shard_condition(watched, keys.ShardCondition.BACKUP_VERIFIED)
    assert verified["status"] == "True" and backup["backupId"] in verified["message"], verified
    assert shard_events(watched.stack, "RestoreDrillStarted") and shard_events(watched.stack, "BackupVerified")
    # Read-only: every file of the repository is as it was; only the primary's archiver added WAL segments
    # meanwhile (archive_timeout), and no drill server promoted (no new timeline history file).
    after = _files(repository)
    changed = [f for f, stamp in before.items() if after.get(f) != stamp]
    added = sorted(set(after) - set(before))
    assert not changed, changed
    assert all(f.startswith("archive/") and not f.endswith(".history") for f in added), added

    failed = restore_drill(stack, {"query": "SELECT * FROM no_such_table"}, last["finishedAt"], FIELD_MANAGER)
    note("restore drill with a failing query", failed)
    assert (failed["result"], failed["reason"]) == ("Failed", "QueryFailed"), failed
    verified = shard_condition(watched, keys.ShardCondition.BACKUP_VERIFIED)
    assert (verified["status"], verified["reason"]) == ("False", "QueryFailed"), verified
    assert _backup_status(watched)["lastVerified"] == last["finishedAt"]
    assert shard_events(watched.stack, "BackupVerificationFailed")

    # A damaged backup is what a drill is for: one byte range of the backup's largest file overwritten
    # (put back afterwards). The drill must fail at the restore and change nothing else.
    damaged = max((f for f in (repository / "backup").rglob("*") if f.is_file() and backup["backupId"] in f.parts),
                  key=lambda f: f.stat().st_size)
    original = damaged.read_bytes()
    pods = {facts.name(p): facts.uid(p) for p in stack.pods()}
    acks = len(load.acked)
    try:
        damaged.write_bytes(original[:len(original) // 2] + bytes(4096) + original[len(original) // 2 + 4096:])
        broken = restore_drill(stack, {"query": "SELECT 1"}, failed["finishedAt"], FIELD_MANAGER)
    finally:
        damaged.write_bytes(original)
    note("restore drill of a damaged backup", {**broken, "damaged": str(damaged.relative_to(repository)),
                                               "size": len(original)})
    assert (broken["result"], broken["reason"], broken["backupId"]) == ("Failed", "RestoreFailed",
                                                                        backup["backupId"]), broken
    assert {facts.name(p): facts.uid(p) for p in stack.pods()} == pods  # nothing else changed
    load.wait_for_acks(acks - len(load.acked) + 20, timeout=120)
    stop_restore_drills(stack, FIELD_MANAGER)  # no drills for the tests that follow


def test_total_loss_brings_the_shard_back_from_the_backup_repository(watched: Watched) -> None:
    stack, load = watched.stack, watched.load
    assert _archiver(watched)["archive_timeout"] == ARCHIVE_TIMEOUT, "spec.postgresConfig did not reach PostgreSQL"
    load.wait_for_acks(100, timeout=120)
    before_backup = list(load.acked)
    backup = _take_backup(watched)
    note("backup", {k: backup.get(k) for k in ("backupId", "pod", "startedAt", "finishedAt")})
    load.wait_for_acks(50, timeout=120)
    before_segment = list(load.acked)
    segment = switch_and_archive(watched.stack, watched.stack.primary_ip(SHARD), watched.stack.password(SHARD))
    load.wait_for_acks(100, timeout=120)
    archiver = _archiver(watched)
    note("archiver just before the loss", archiver)

    lost_at = time.monotonic()
    gone_at = _lose_everything(watched)
    try:
        stack.wait_serving(SHARD, replicas=REPLICAS, timeout=300)
        load.wait_for_acks(20, timeout=120)
    except (TimeoutError, AssertionError) as exc:
        note("the shard did not come back; evidence", _telling(_logs(watched)))
        raise AssertionError(f"after total loss the shard did not serve again: {exc}") from exc
    logs = _logs(watched)
    note("what v0.1.0 did after the loss", _telling(logs))
    # Each pod restored the newest backup on its own (MonitorPostgres, empty data directory).
    restored = {pod: _field(next(line for line in log.splitlines() if RESTORED in line), "backup_id")
                for pod, log in logs.items() if RESTORED in log}
    assert set(restored) == {facts.name(p) for p in stack.pods()}, restored
    assert set(restored.values()) == {backup["backupId"]}, restored
    # The restore in the status (the agent reads postgres_action from each pooler's Status).
    def restored_status() -> dict[str, Any] | None:
        found: dict[str, Any] = (shard_cr(stack).get("status") or {}).get("restore") or {}
        return found if found.get("state") == "Restored" else None

    restore: dict[str, Any] = wait_for(restored_status, 60, "status.restore to say Restored", interval=1)
    started = shard_events(watched.stack, "RestoreStarted")
    note("status.restore", {**restore, "RestoreStarted events": len(started),
                            "RestoreCompleted events": len(shard_events(watched.stack, "RestoreCompleted"))})
    assert restore["backupId"] == backup["backupId"] and restore.get("walPosition"), restore
    assert set(restore["pods"]) <= set(restored) and started, restore
    # The election after the restore: the WAL position each restored standby reached (its replay end).
    recruited = sorted({_field(line, "lsn") or "" for log in logs.values() for line in log.splitlines()
                        if "Recruited pooler" in line and (_field(line, "time") or "") > backup["finishedAt"]})

    count = min(len(load.acked), len(load.ack_times))  # the load appends to both, one after the other
    pairs = list(zip(load.acked[:count], load.ack_times[:count], strict=True))
    acked = [i for i, t in pairs if t <= gone_at]
    times = [t for _, t in pairs if t <= gone_at]
    back = next(t for _, t in pairs if t > gone_at)
    present = rows_present(watched, acked)
    missing = [i for i in acked if i not in present]
    first_missing = next((n for n, i in enumerate(acked) if i not in present), len(acked))
    rpo_s = times[-1] - times[first_missing] if first_missing < len(acked) else 0.0
    note("RPO / RTO", {"acknowledged before the loss": len(acked), "RPO rows": len(missing),
                       "RPO seconds": round(rpo_s, 1), "RTO seconds (loss to first write)": round(back - lost_at, 1),
                       "deleting took": round(gone_at - lost_at, 1), "restored": backup["backupId"],
                       "recruited at LSN": recruited, "segment archived on purpose": segment})
    assert set(before_backup) <= present, "a row acknowledged before the backup did not come back"
    assert set(before_segment) <= present, f"a row acknowledged before segment {segment} was archived is missing"


def test_total_loss_with_an_emptied_repository_is_refused_and_changes_nothing(watched: Watched) -> None:
    """The same loss with the repository emptied too (a wrong or emptied backup location). By itself
    v0.1.0 takes this for a new shard (initdb, a first backup, Ready without a single earlier row;
    measured before the guard: 0 of 383, 0 of 396, 0 of 372 rows back). The shard recorded backups, so
    the guard must hold every new pod before PostgreSQL starts, say why on the MultigresShard (condition
    and event), write nothing to the repository; and once the repository is back, the shard is."""
    stack, load = watched.stack, watched.load
    recorded = bootstrap.recorded_backup(shard_cr(stack), None)
    assert recorded, "the shard recorded no backup: the guard would rightly let it initdb"
    load.wait_for_acks(20, timeout=120)
    # Before the switch, so every one of them is in the segment it closes; and only those the primary
    # has: the load's list also holds the rows the previous test's loss took (its RPO).
    acked = list(load.acked)
    archived = sorted(rows_present(watched, acked))
    segment = switch_and_archive(watched.stack, watched.stack.primary_ip(SHARD), watched.stack.password(SHARD))
    aside = stack.workdir / "repository-aside"  # the same filesystem: moved, owners and modes kept
    lost_at = time.monotonic()
    gone_at = _lose_everything(watched, repository_aside=aside)
    at_loss = list(load.acked)[len(acked):]  # acknowledged since `archived`; none while every pod is gone
    repository = _repository(watched)

    def refused() -> dict[str, Any] | None:
        cond = shard_condition(watched, keys.ShardCondition.BOOTSTRAP_REFUSED)
        held = cond.get("status") == "True" and all(facts.name(p) in cond.get("message", "") for p in stack.pods())
        return cond if held and len(stack.pods()) == REPLICAS else None

    try:
        cond = wait_for(refused, 240, "BootstrapRefused naming every pool pod", interval=1)
    except TimeoutError:
        note("no refusal; evidence", {"conditions": (shard_cr(stack).get("status") or {}).get("conditions"),
                                      "logs": _telling(_logs(watched))})
        raise
    refused_after = time.monotonic() - gone_at
    assert cond["reason"] == bootstrap.REASON_NO_BACKUP, cond
    assert recorded in cond["message"] and "spec.backup.bootstrap: initdb" in cond["message"], cond
    warnings = shard_events(watched.stack, keys.ShardCondition.BOOTSTRAP_REFUSED)
    assert warnings and warnings[-1]["type"] == "Warning", warnings
    cr = shard_cr(stack)
    assert cr["status"]["phase"] == "Degraded", cr["status"]
    # Held: the kubelet retries the check with back-off (waited for: every pod's check refused again);
    # nothing starts and nothing is written meanwhile.
    def check_restarts(pod: dict[str, Any]) -> int:
        checks = [s for s in pod["status"].get("initContainerStatuses") or []
                  if s["name"] == keys.REPOSITORY_CHECK_CONTAINER]
        return checks[0].get("restartCount", 0) if checks else 0

    def retried() -> list[dict[str, Any]] | None:
        pods = stack.pods()
        return pods if pods and all(check_restarts(p) >= 1 for p in pods) else None

    pods = wait_for(retried, 120, "every pod's repository check retried", interval=1)
    assert _listing(repository) == [], _listing(repository)
    assert not any(facts.condition_true(p, "Ready") for p in pods)
    for pod in pods:
        with pytest.raises(FileNotFoundError):  # multipooler never started, so no initdb
            stack.kubelet.logs(stack.namespace, facts.name(pod), "multipooler")  # type: ignore[union-attr]
    for claim in _claims(watched, "data-"):
        assert not (stack.kubelet.pvc_path(stack.namespace, claim) / "pg_data" /  # type: ignore[union-attr]
                    "PG_VERSION").exists()
    note("emptied repository refused", {"refused after (s, from the loss)": round(refused_after, 1),
                                        "reason": cond["reason"], "message": cond["message"][:400],
                                        "warning events": len(warnings)})

    # The repository back: the check passes on the kubelet's next retry and the shard restores.
    for entry in aside.iterdir():
        shutil.move(entry, repository / entry.name)
    back_at = time.monotonic()
    try:
        stack.wait_serving(SHARD, replicas=REPLICAS, timeout=600)
        load.wait_for_acks(20, timeout=120)
    except (TimeoutError, AssertionError) as exc:
        note("the shard did not come back with its repository; evidence", _telling(_logs(watched)))
        raise AssertionError(f"after the repository came back: {exc}") from exc
    serving = time.monotonic() - back_at
    present = rows_present(watched, archived)
    after = rows_present(watched, at_loss)
    lost = [i for i in at_loss if i not in after]
    wait_for(lambda: shard_condition(watched, keys.ShardCondition.BOOTSTRAP_REFUSED).get("status") == "False", 60,
             "BootstrapRefused to clear", interval=1)
    note("repository back", {"serving again after (s)": round(serving, 1), "loss to serving (s)":
                             round(time.monotonic() - lost_at, 1), "acknowledged before the archived segment":
                             len(archived), "back": len(present), "segment": segment,
                             "acknowledged after the switch, before the loss": len(at_loss), "RPO rows": len(lost),
                             "cleared events": len(shard_events(watched.stack, "BootstrapAllowed"))})
    assert set(archived) <= present, "a row acknowledged before the archived segment is missing"
