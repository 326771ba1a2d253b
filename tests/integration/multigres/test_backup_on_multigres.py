"""Base backups on real Multigres v0.1.0 and pgBackRest, run by the real agent and reported by the
real operator, under a steady write load: a schedule produces a backup on a standby that GetBackups
lists and the shard's status shows, BackupHealthy follows it; a scale-down requested while a backup
runs never drains the pod that is taking it; an on-demand request runs; a replica added afterwards
restores from that backup and holds the rows written before it. (Order matters: one stack.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.agent import backup_health
from multigres_pools.agent.kube import now_rfc3339
from multigres_pools.dataplane.base import Backup, ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.writeload import TABLE

from .safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    apply,
    backup_state,
    converge,
    finished_backup,
    note,
    request_backup,
    scale,
    shard_cr,
    uids,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]

NEVER = "0 0 1 1 *"  # once a year: the schedule exists but does not fire during the test
EVERY_MINUTE = "* * * * *"
FIELD_MANAGER = "backup-test"
LATE_DRAIN = {keys.DrainState.DRAINING, keys.DrainState.ACKNOWLEDGED, keys.DrainState.READY_FOR_DELETION}


def _shard_spec(stack: Any) -> dict[str, Any]:
    doc: dict[str, Any] = stack.sample_shard(replicas=3, name=SHARD)
    doc["spec"]["backup"]["schedules"] = {"full": NEVER, "differential": NEVER}
    # Short, so the first test does not wait long for the bootstrap backup to turn stale; the agent checks
    # every 3 s (--backup-interval), so a fresh backup is still seen as fresh.
    doc["spec"]["backup"]["healthThreshold"] = "45s"
    return doc


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("backup"), _shard_spec, 3,
                       agent_args=("--backup-interval", "3")) as w:
        yield w


def _cr(watched: Watched) -> dict[str, Any]:
    return shard_cr(watched.stack)


def _state(watched: Watched) -> dict[str, Any]:
    return backup_state(watched.stack)


def _status_backup(watched: Watched) -> dict[str, Any]:
    return ((_cr(watched).get("status") or {}).get("backup")) or {}


def _healthy(watched: Watched) -> str | None:
    cond = next((c for c in (_cr(watched).get("status") or {}).get("conditions") or []
                 if c.get("type") == keys.ShardCondition.BACKUP_HEALTHY), None)
    return cond.get("status") if cond else None


def _schedule(watched: Watched, differential: str, full: str = NEVER) -> None:
    apply(watched.stack, lambda spec: spec["backup"].update(schedules={"full": full, "differential": differential}))


def _listed(watched: Watched) -> list[Backup]:
    stack = watched.stack
    plane = V0_1(dial_host=stack.dial_host)
    try:
        topo = ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))
        leader = plane.leader(plane.list_poolers(topo))
        assert leader is not None
        return plane.get_backups(leader, 0)
    finally:
        plane.close()


def _events(watched: Watched, reason: str) -> list[dict[str, Any]]:
    kube = watched.stack.kube()
    try:
        return [e for e in kube.list("v1", "Event", watched.stack.namespace, "") if e.get("reason") == reason]
    finally:
        kube.close()


def _finished(watched: Watched, trigger: str, after: str = "") -> dict[str, Any] | None:
    return finished_backup(watched.stack, trigger, after)


def test_a_scheduled_backup_runs_on_a_standby_is_listed_and_backup_health_follows(watched: Watched) -> None:
    # The bootstrap backup ages past healthThreshold (45s): BackupHealthy turns False first.
    wait_for(lambda: _healthy(watched) == "False", 300, "BackupHealthy=False (the bootstrap backup is stale)",
             interval=1)
    handled = (_status_backup(watched).get("schedule") or {}).get("full")
    assert handled, "the agent recorded the schedule when it first saw it, without running it"
    # Full: v0.1.0 keeps one differential (repo1-retention-diff=1), so the next minute's would expire it.
    _schedule(watched, differential=NEVER, full=EVERY_MINUTE)
    last = wait_for(lambda: _finished(watched, "schedule"), 240, "a scheduled backup to finish", interval=1)
    note("scheduled backup", last)
    assert not last.get("error"), last
    assert last["type"] == "full" and not last["forcePrimary"]
    assert last["pod"] in {m.pod for m in watched.stack.members(SHARD) if not m.primary}, "taken on a standby"
    listed = next((b for b in _listed(watched) if b.backup_id == last["backupId"]), None)
    assert listed is not None and listed.complete and listed.job_id == last["jobId"], listed
    assert last.get("sizeBytes", 0) > 0
    assert _status_backup(watched)["schedule"]["full"] > handled
    wait_for(lambda: _healthy(watched) == "True", 120, "BackupHealthy=True after the scheduled backup", interval=1)
    assert any(last["pod"] in e["message"] for e in _events(watched, "BackupCompleted"))


def test_a_scale_down_requested_while_a_backup_runs_never_drains_the_pod_taking_it(watched: Watched) -> None:
    stack = watched.stack
    before = uids(stack)
    # The every-minute schedule is still on: scale down the moment the next backup starts.
    running = wait_for(lambda: _state(watched).get("running"), 150, "the next scheduled backup to start",
                       interval=0.2)
    generation = scale(stack, 2)
    converge(stack, generation, replicas=2)
    _schedule(watched, differential=NEVER)
    wait_for(lambda: not _state(watched).get("running"), 300, "the last scheduled backup to end", interval=1)
    events = list(watched.timeline.events)
    gone = [uid for uid in before if uid not in {facts.uid(p) for p in stack.pods()}]
    assert len(gone) == 1
    overlaps = [(e.name, e.drain, e.deleting, e.backup) for e in events
                if e.backup and (e.drain in LATE_DRAIN or e.deleting or e.type == "DELETED")]
    assert overlaps == [], "a pod carried the backup mark while it was drained or deleted"
    failed = _events(watched, "BackupFailed")
    assert [e for e in failed if e["involvedObject"].get("name") == before[gone[0]]] == [], "none lost its pod"
    blocked = [e["message"] for e in _events(watched, "DrainBlocked") if keys.DRAIN_BLOCKED_BACKUP in e["message"]]
    note("scale-down during a backup", {"backup on": running["pod"], "drained": before[gone[0]],
                                        "drain waits for the backup": blocked,
                                        "failed backups": [e["message"] for e in failed]})


def _request_backup(watched: Watched, kind: str) -> None:
    request_backup(watched.stack, kind, FIELD_MANAGER)


def _request_drain(watched: Watched, pod: str) -> None:
    """What the engine writes for a decommission (plan_drain.request_drain), written by the test the
    moment the backup starts, so the drain and the backup overlap for sure."""
    kube = watched.stack.kube()
    try:
        kube.merge_patch("v1", "Pod", watched.stack.namespace, pod, {"metadata": {"annotations": {
            keys.ANN_DRAIN_STATE: keys.DrainState.REQUESTED.value, keys.ANN_DRAIN_REQUESTED_AT: now_rfc3339(),
            keys.ANN_DRAIN_REASON: keys.DrainReason.DECOMMISSION.value}}}, field_manager=FIELD_MANAGER)
    finally:
        kube.close()


def test_an_on_demand_backup_runs_and_a_drain_of_its_pod_waits_for_it(watched: Watched) -> None:
    stack = watched.stack
    previous = (_status_backup(watched).get("last") or {}).get("startedAt", "")
    _request_backup(watched, "full")
    running = wait_for(lambda: _state(watched).get("running"), 120, "the requested backup to start", interval=0.05)
    pod = running["pod"]
    apply(stack, lambda spec: spec["pools"]["default"].update(decommission=[pod]))
    _request_drain(watched, pod)
    last = wait_for(lambda: _finished(watched, "request", previous), 240, "the requested backup to finish",
                    interval=1)
    note("requested backup", last)
    assert not last.get("error") and last["type"] == "full" and last["pod"] == pod, last
    assert keys.ANN_BACKUP_REQUEST not in facts.annotations(_cr(watched)), "the request is acknowledged"
    listed = {b.backup_id: b for b in _listed(watched)}
    assert listed[last["backupId"]].complete and listed[last["backupId"]].type == "full"
    wait_for(lambda: pod not in {facts.name(p) for p in stack.pods()}, 300, f"the decommissioned {pod} to go",
             interval=1)
    generation = apply(stack, lambda spec: spec["pools"]["default"].update(decommission=[]))
    converge(stack, generation, replicas=2)
    events = [e for e in watched.timeline.events if e.name == pod]
    assert any(e.backup and e.drain == keys.DrainState.REQUESTED for e in events), "the drain and the backup overlapped"
    assert [e for e in events if e.backup and (e.drain in LATE_DRAIN or e.deleting)] == []
    blocked = [e for e in _events(watched, "DrainBlocked")
               if e["involvedObject"].get("name") == pod and keys.DRAIN_BLOCKED_BACKUP in e["message"]]
    assert blocked, "the agent said why the drain waited"
    assert _events(watched, "BackupFailed") == []


def test_a_new_replica_restores_from_the_newest_backup_and_holds_the_rows_written_before_it(watched: Watched) -> None:
    stack = watched.stack
    acked_before = list(watched.load.acked)
    previous = (_status_backup(watched).get("last") or {}).get("startedAt", "")
    _request_backup(watched, "differential")
    last = wait_for(lambda: _finished(watched, "request", previous), 240, "the requested backup to finish",
                    interval=1)
    assert not last.get("error"), last
    newest = backup_health.newest_complete(_listed(watched))
    assert newest is not None and newest[0].backup_id == last["backupId"], "it is the newest"

    # Scale to 4: index 0 comes back on its retained volume (no restore: its data is there), index 3
    # is new, starts on an empty volume and restores the newest backup.
    before = set(uids(stack))
    generation = scale(stack, 4)
    converge(stack, generation, replicas=4)
    assert stack.kubelet is not None
    logs = {facts.name(p): stack.kubelet.logs(stack.namespace, facts.name(p), "multipooler")
            for p in stack.pods() if facts.uid(p) not in before}
    fresh = {name: log for name, log in logs.items() if "directory not initialized but backups available" in log}
    assert fresh, {name: log[-2000:] for name, log in logs.items()}
    new, log = next(iter(fresh.items()))
    restoring = [line for line in log.splitlines() if "MonitorPostgres: restoring from backup" in line]
    assert restoring and last["backupId"] in restoring[0], restoring
    assert any("successfully restored from backup" in line and last["backupId"] in line for line in log.splitlines())
    member = next(m for m in stack.members(SHARD) if m.pod == new)
    password = stack.password(SHARD)

    def rows_before_backup_present() -> bool:
        with psycopg.connect(stack.dsn(member.ip, password=password), connect_timeout=5) as conn:
            present = {i for (i,) in conn.execute(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)",
                                                  (acked_before,)).fetchall()}
        return present == set(acked_before)

    wait_for(rows_before_backup_present, 120, "the rows acknowledged before the backup on the new replica",
             interval=1)
    note("restore check", {"pod": new, "restored": last["backupId"], "rows written before it": len(acked_before)})
