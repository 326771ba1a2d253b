"""Day-2 operations on real Multigres v0.1.0 and PostgreSQL 17, on ONE 3-pod shard under a steady SQL
write load, with the operator, the agent and a live multiorch, in this order (each step leaves the
shard as the next expects it):

1. fence a standby: refused for the primary and for a second standby the durability policy needs;
   the fenced one leaves the synchronous set as the primary sees it, is not deleted, is fenced again
   after its multipooler restarts, and writes keep being acknowledged; unfence: it is back in the set;
2. decommission a chosen standby: exactly that pod is drained and replaced (at a new index);
3. maintenance window closed: a scale-down waits and the condition says until when; open: it runs;
4. pause: a spec change is withheld while status keeps being written; unpause: it proceeds;
5. the primary's pod deleted while the agent, every multiorch or a standby's multipooler crashes: one
   primary after each, never two writable; then a switchover on request: a named pod and an unknown one
   refused, `any` moves the primary;
6. a standby promoted by hand: kept unready (the agent's readiness gate), the shard Degraded; recreated,
   it is back in recovery; once the timeline its promotion archived is removed from the repository,
   a decommission replaces it with a fresh standby.
No acknowledged write is lost at any step."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import shutil
import signal
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.dataplane.base import DataPlaneError, Eligibility, ShardTopology, match_pod
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

from ..safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    app_names,
    apply,
    assert_never_two_writable,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    assert_primary_handed_over,
    converge,
    events_about,
    listed,
    note,
    patch_shard,
    scale,
    setting_on_every_pod,
    shard_cr,
    uids,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
POOL = "default"


def _shard(watched: Watched) -> dict[str, Any]:
    return shard_cr(watched.stack)


def _condition(watched: Watched, ctype: str) -> dict[str, Any]:
    return facts.condition(_shard(watched), ctype) or {}


def _pod(watched: Watched, name: str) -> dict[str, Any]:
    return next(p for p in watched.stack.pods() if facts.name(p) == name)


def _sync_names(watched: Watched) -> str:
    primary = watched.stack.primary()
    return primary.synchronous_standby_names if primary else ""


def _standbys(watched: Watched) -> list[str]:
    primary = watched.stack.primary()
    assert primary is not None
    return sorted(facts.name(p) for p in watched.stack.pods() if facts.name(p) != primary.pod)


def _set_list(watched: Watched, field: str, names: list[str]) -> int:
    return apply(watched.stack, lambda spec: spec["pools"][POOL].update({field: names}))


def _annotate(watched: Watched, value: str | None) -> None:
    patch_shard(watched.stack, {"metadata": {"annotations": {keys.ANN_PAUSED: value}}}, "test")


def _eligibility(watched: Watched, pod: str) -> Eligibility | None:
    plane = V0_1(dial_host=watched.stack.dial_host)
    try:
        topo = ShardTopology((watched.stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf",
                             ("zone1",))
        own = match_pod(plane.list_poolers(topo), pod)
        return plane.standby_state(own).eligibility if own else None
    except DataPlaneError:
        return None
    finally:
        plane.close()


class _Stages:
    """Seconds per stage of a test, printed at the end (what a slow step costs)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.seen: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.seen[name], self.last = round(now - self.last, 1), now


def test_fence_refusals_fence_refence_after_restart_unfence(watched: Watched) -> None:
    stack = watched.stack
    stage = _Stages()
    primary = stack.primary()
    assert primary is not None
    first, second = _standbys(watched)
    apps = {facts.name(p): stack.app_name(facts.name(p)) for p in stack.pods()}
    before = uids(stack)

    # The primary: refused, nothing changed.
    _set_list(watched, "fenced", [primary.pod])
    wait_for(lambda: _condition(watched, "FenceRefused").get("reason") == "IsPrimary", 120,
             "FenceRefused=IsPrimary on the shard", interval=1)
    assert primary.pod in _condition(watched, "FenceRefused")["message"]
    assert stack.primary() is not None and stack.primary().pod == primary.pod  # type: ignore[union-attr]
    stage("primary refused")

    # A standby: out of the synchronous set as the primary sees it, the pod kept, writes acknowledged.
    _set_list(watched, "fenced", [first])
    started = time.monotonic()
    wait_for(lambda: not listed(_sync_names(watched), apps[first]), 120,
             f"{apps[first]} to leave synchronous_standby_names", interval=0.5)
    note("fence: seconds from the spec change to leaving synchronous_standby_names",
         round(time.monotonic() - started, 1))
    stage("out of the synchronous set")
    wait_for(lambda: facts.condition_true(_pod(watched, first), keys.POD_CONDITION_FENCED), 120,
             f"pod condition Fenced=True on {first}", interval=1)
    wait_for(lambda: _condition(watched, "Fenced").get("status") == "True", 120, "shard Fenced=True", interval=1)
    stage("Fenced on the pod and the shard")
    assert first in _condition(watched, "Fenced")["message"]
    assert _condition(watched, "FenceRefused").get("status") == "False"
    assert listed(_sync_names(watched), apps[second])
    assert_nothing_lost(watched, more=10)  # acknowledged while fenced (each ack waits for a standby)
    stage("writes acknowledged while fenced")

    # A second standby would leave the primary alone with AT_LEAST_2: refused, still synchronous.
    _set_list(watched, "fenced", [first, second])
    wait_for(lambda: _condition(watched, "FenceRefused").get("reason") == "DurabilityPolicy", 120,
             "FenceRefused=DurabilityPolicy", interval=1)
    assert second in _condition(watched, "FenceRefused")["message"]
    assert listed(_sync_names(watched), apps[second]) and not listed(_sync_names(watched), apps[first])
    _set_list(watched, "fenced", [first])
    stage("second standby refused")

    # The fence lives in the pooler's memory: a restarted multipooler is fenced again by the agent.
    old_pids = set(stack.signal_pooler(first))
    wait_for(lambda: set(stack.pooler_pids(first)) - old_pids, 180, f"{first}'s multipooler to run again",
             interval=1)
    # Only the agent can have told the new process: the flag is never persisted.
    wait_for(lambda: _eligibility(watched, first) is Eligibility.INELIGIBLE, 240,
             f"{first}'s restarted multipooler to report INELIGIBLE", interval=1)
    wait_for(lambda: not listed(_sync_names(watched), apps[first])
             and facts.condition_true(_pod(watched, first), keys.POD_CONDITION_FENCED), 120,
             f"{first} out of the synchronous set again", interval=1)
    stage("fenced again after a multipooler restart")
    assert uids(stack) == before, "fencing never deletes or replaces a pod"
    assert_nothing_lost(watched, more=10)
    stage("writes acknowledged after the restart")

    # Unfence: back in the synchronous set, marker gone.
    _set_list(watched, "fenced", [])
    wait_for(lambda: listed(_sync_names(watched), apps[first]), 180,
             f"{apps[first]} back in synchronous_standby_names", interval=0.5)
    wait_for(lambda: keys.ANN_FENCED not in facts.annotations(_pod(watched, first))
             and _condition(watched, "Fenced").get("status") == "False", 120, "the fence undone", interval=1)
    assert uids(stack) == before
    stage("unfenced, back in the synchronous set")
    assert_nothing_lost(watched)
    stage("writes acknowledged after unfencing")
    note("fence test: seconds per stage", stage.seen)
    note("fence test: longest stretch without an acknowledged write (s)",
         round(watched.load.longest_outage().seconds, 2))


def test_decommission_replaces_exactly_the_chosen_standby(watched: Watched) -> None:
    stack = watched.stack
    before = uids(stack)
    names = app_names(stack)
    victim = _standbys(watched)[-1]
    victim_uid = next(uid for uid, name in before.items() if name == victim)

    generation = _set_list(watched, "decommission", [victim])
    converge(stack, generation, replicas=3, timeout=600)
    wait_for(lambda: victim not in {facts.name(p) for p in stack.pods()}, 300, f"{victim} to be gone", interval=1)
    after = uids(stack)
    assert set(before) - set(after) == {victim_uid}, "exactly the chosen pod went"
    assert len(after) == 3 and victim not in after.values()
    assert_out_of_sync_set_when_deleted(watched, names, [victim_uid])
    assert watched.timeline.drain_states(victim_uid)[-1:] == ["ready-for-deletion"]
    assert_nothing_lost(watched)
    stack.wait_serving(SHARD, replicas=3, timeout=300)


def test_scale_down_waits_for_the_maintenance_window(watched: Watched) -> None:
    stack = watched.stack
    now = dt.datetime.now(dt.UTC)
    # Closed: a window two days from now; open: one that started this hour today.
    day = maintenance.WEEKDAYS[(now.weekday() + 2) % 7]
    closed = {"days": [day], "start": "00:00", "duration": "1h"}
    opens = maintenance.next_opening((maintenance.window([day], "00:00", dt.timedelta(hours=1)),), now)
    assert opens is not None
    before = uids(stack)

    def closed_and_scaled_down(spec: dict[str, Any]) -> None:
        spec.update(maintenanceWindows=[closed])
        spec["pools"][POOL].update(replicasPerCell=2)

    apply(stack, closed_and_scaled_down)
    wait_for(lambda: _condition(watched, "WaitingForMaintenanceWindow").get("status") == "True", 120,
             "WaitingForMaintenanceWindow=True", interval=1)
    message = _condition(watched, "WaitingForMaintenanceWindow")["message"]
    assert "scale-down" in message and facts.format_time(opens) in message, message
    time.sleep(5)  # several operator passes: still no drain
    assert uids(stack) == before
    assert not any(facts.annotations(p).get(keys.ANN_DRAIN_STATE) for p in stack.pods())

    open_now = {"days": [maintenance.WEEKDAYS[now.weekday()]], "start": f"{now.hour:02d}:00", "duration": "2h"}
    generation = apply(stack, lambda spec: spec.update(maintenanceWindows=[open_now]))
    converge(stack, generation, replicas=2, timeout=600)
    assert len(uids(stack)) == 2
    assert _condition(watched, "WaitingForMaintenanceWindow").get("status") == "False"
    assert_nothing_lost(watched)


def _orch_annotation(watched: Watched, key: str) -> list[str | None]:
    """The annotation on the pod template of every MultiOrch Deployment."""
    kube = watched.stack.kube()
    try:
        found = kube.list("apps/v1", "Deployment", watched.stack.namespace,
                          f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_MULTIORCH}")
    finally:
        kube.close()
    assert found
    return [((d["spec"]["template"].get("metadata") or {}).get("annotations") or {}).get(key) for d in found]


def test_pause_withholds_a_spec_change_until_lifted(watched: Watched) -> None:
    """A MultiOrch pod annotation added in the spec: the cheapest write to watch being held back."""
    stack = watched.stack
    before = uids(stack)
    key, value = "example.com/day2", "after-the-pause"
    _annotate(watched, keys.PAUSED_TRUE)
    wait_for(lambda: _condition(watched, "Paused").get("status") == "True", 120, "Paused=True", interval=1)
    generation = apply(stack, lambda spec: spec.setdefault("multiorch", {}).update(podAnnotations={key: value}))
    # Status keeps being written: the withheld write is listed, the new generation observed.
    wait_for(lambda: "apply Deployment" in _condition(watched, "Paused").get("message", "")
             and (_shard(watched).get("status") or {}).get("observedGeneration") == generation, 120,
             "the paused pass to report the withheld Deployment", interval=1)
    time.sleep(3)  # more passes may come; none writes
    assert set(_orch_annotation(watched, key)) == {None}, "nothing is written while paused"

    _annotate(watched, None)
    wait_for(lambda: set(_orch_annotation(watched, key)) == {value}, 120,
             "the MultiOrch Deployment updated once the pause is lifted", interval=1)
    wait_for(lambda: _condition(watched, "Paused").get("status") == "False", 60, "Paused=False", interval=1)
    assert uids(stack) == before, "no pool pod touched"
    assert_nothing_lost(watched)


def _recreated(watched: Watched, name: str, uid: str) -> bool:
    return any(facts.name(p) == name and facts.uid(p) != uid for p in watched.stack.pods())


def _kill_all(pids: list[int]) -> None:
    assert pids, "nothing to kill"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_primary_handover_interrupted_by_a_crash_still_ends_with_one_primary(watched: Watched) -> None:
    """Issue #24: the primary's pod deleted while, at the same moment, (1) the agent that hurries the
    election is SIGKILLed and restarted, (2) every multiorch is SIGKILLed (the kubelet restarts them),
    (3) a standby's multipooler is SIGKILLed. Each time another pooler ends up the only primary, no two
    PostgreSQL servers are ever writable at once (5 Hz samples) and every acknowledged write is kept."""
    stack = watched.stack
    converge(stack, scale(stack, 3), replicas=3, timeout=600)  # the maintenance step left 2
    stack.wait_serving(SHARD, replicas=3, timeout=300)
    faults: dict[str, Callable[[list[str]], object]] = {
        "agent": lambda _: stack.restart_agent(),
        "multiorch": lambda _: _kill_all(stack.orchestrator_pids()),
        "target": lambda standbys: _kill_all(stack.pooler_pids(standbys[0])),
    }
    for fault, inject in faults.items():
        primary, standbys = stack.primary(), _standbys(watched)
        assert primary is not None, f"before {fault}: one primary"
        uid = facts.uid(_pod(watched, primary.pod))
        kube = stack.kube()
        try:
            kube.delete("v1", "Pod", stack.namespace, primary.pod)
        finally:
            kube.close()
        inject(standbys)
        wait_for(functools.partial(_recreated, watched, primary.pod, uid), 300,
                 f"{primary.pod} recreated after the {fault} fault", interval=1)
        new = stack.wait_serving(SHARD, replicas=3, timeout=300)
        note(f"primary handover with a {fault} crash", f"{primary.pod} -> {new.pod}")
        watched.load.wait_for_acks(30, timeout=120)
    assert_never_two_writable(watched)
    assert_nothing_lost(watched)


def _request_switchover(watched: Watched, value: str) -> dict[str, Any]:
    """Annotate the MultigresShard as docs/operations.md ("Move the primary") says; the engine's decision
    once it removed the request (status.switchover)."""
    stack = watched.stack
    before = (shard_cr(stack).get("status") or {}).get("switchover")
    patch_shard(stack, {"metadata": {"annotations": {keys.ANN_SWITCHOVER_REQUEST: value}}}, "test")

    def decided() -> dict[str, Any] | None:
        cr = shard_cr(stack)
        shown = (cr.get("status") or {}).get("switchover")
        pending = keys.ANN_SWITCHOVER_REQUEST in facts.annotations(cr)
        return shown if shown and shown != before and not pending else None

    return wait_for(decided, 120, f"the engine's decision on switchover-request={value}", interval=0.5)


def test_a_switchover_on_request_moves_the_primary_and_refuses_what_it_cannot_do(watched: Watched) -> None:
    """Issue #24, on demand: a named pod is refused on v0.1.0 (multiorch alone chooses) and an unknown
    one too, with the primary untouched; `any` drains the primary for a switchover, another pooler
    becomes the only primary (the agent hurried the election), the old pod comes back as a standby,
    never two writable servers, nothing lost."""
    stack = watched.stack
    stack.wait_serving(SHARD, replicas=3, timeout=300)
    primary = stack.primary()
    assert primary is not None
    standby = _standbys(watched)[0]
    named = _request_switchover(watched, standby)
    assert named["state"] == "Refused" and "cannot elect a chosen pod" in named["message"], named
    unknown = _request_switchover(watched, "no-such-pod")
    assert unknown["state"] == "Refused" and "'no-such-pod' is not a pod of this shard" in unknown["message"]
    assert events_about(stack, "SwitchoverRefused", SHARD)
    still = stack.primary()
    assert still is not None and still.pod == primary.pod, "a refused request moved the primary"

    uid = facts.uid(_pod(watched, primary.pod))
    accepted = _request_switchover(watched, keys.SWITCHOVER_ANY)
    assert accepted["decision"] == "Accepted" and accepted["from"] == primary.pod, accepted
    wait_for(functools.partial(_recreated, watched, primary.pod, uid), 300, f"{primary.pod} recreated", interval=1)
    new = stack.wait_serving(SHARD, replicas=3, timeout=300)
    assert new.pod != primary.pod
    requested = [e.get("message") or "" for e in events_about(stack, "DrainRequested", SHARD)]
    assert any(primary.pod in m and keys.DrainReason.SWITCHOVER in m for m in requested), requested
    assert_primary_handed_over(stack, primary.pod)

    def completed() -> dict[str, Any] | None:
        shown = (shard_cr(stack).get("status") or {}).get("switchover") or {}
        return shown if shown.get("state") == "Completed" else None

    done = wait_for(completed, 120, "status.switchover Completed", interval=1)
    assert done["primary"] == new.pod, done
    note("switchover on request", f"{primary.pod} -> {new.pod}")
    watched.load.wait_for_acks(30, timeout=120)
    assert_never_two_writable(watched)
    assert_nothing_lost(watched)


def _gate(watched: Watched, name: str) -> dict[str, Any]:
    """The pod's readiness gate condition; {} while it has none, or while the pod is being recreated."""
    pod = next((p for p in watched.stack.pods() if facts.name(p) == name), None)
    return (facts.condition(pod, keys.POD_READINESS_GATE) if pod else None) or {}


def _remove_timelines_after(stack: MultigresStack, timeline: int) -> list[str]:
    """What docs/operations.md ("Alert: MultigresPoolsWritableStandby") has an operator remove from a
    filesystem repository, done on the backup PVC's host directory: every history file and WAL
    directory of a timeline newer than `timeline` (pgBackRest names both by the 8-hex-digit timeline)."""
    assert stack.kubelet is not None
    removed = []
    for archive in (stack.kubelet.workdir / "pvc" / stack.namespace).glob("backup-data-*/archive/*/*/"):
        for entry in archive.iterdir():
            head = entry.name[:8]
            if all(c in "0123456789ABCDEF" for c in head) and int(head, 16) > timeline:
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(entry.name)
    return sorted(removed)


# PostgreSQL's words for a standby whose recovery follows a timeline that forked before its own data.
STRAY_TIMELINE_FATAL = "does not contain minimum recovery point"


def _postgres_log_tail(stack: MultigresStack, pod: str) -> str:
    """The last FATAL of the pod's PostgreSQL, from its log on the data PVC's host directory."""
    assert stack.kubelet is not None
    spec = next((p["spec"] for p in stack.pods() if facts.name(p) == pod), {"volumes": []})
    claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]
              if v["name"] == layout.VOL_DATA and "persistentVolumeClaim" in v]
    if not claims:
        return f"{pod}: no data PVC"
    log = stack.kubelet.workdir / "pvc" / stack.namespace / claims[0] / "pg_data" / "postgresql.log"
    fatal = [line for line in log.read_text(errors="replace").splitlines() if "FATAL:" in line] if log.exists() else []
    return fatal[-1].strip() if fatal else "no FATAL in its postgres log"


def _in_recovery(watched: Watched, pod: str) -> bool | None:
    member = next((m for m in watched.stack.members() if m.pod == pod), None)
    return None if member is None else not member.primary


def test_a_standby_promoted_by_hand_is_kept_unready_until_replaced(watched: Watched) -> None:
    """Issue #24, item 4: PostgreSQL out of recovery on a pod that is not the leader (here `pg_promote()`
    by hand on a standby; an old primary restarted without standby.signal looks the same) makes the pod
    not Ready and the shard Degraded, while the real primary keeps acknowledging writes; recreated, the pod
    runs in recovery (or, when multiorch rewound it first, fails on the promotion's stray timeline), and
    after the stray timeline leaves the repository a decommission replaces it with a fresh standby."""
    stack = watched.stack
    victim = _standbys(watched)[0]
    ip = _pod(watched, victim)["status"]["podIP"]
    assert _gate(watched, victim).get("reason") == keys.RecoveryGateReason.STANDBY
    with psycopg.connect(stack.dsn(ip, SHARD), connect_timeout=3, autocommit=True) as conn:
        conn.execute("SELECT pg_promote()")
    wait_for(lambda: _gate(watched, victim).get("status") == "False", 60,
             f"the agent to set {keys.POD_READINESS_GATE}=False on {victim}", interval=0.5)
    wait_for(lambda: not facts.condition_true(_pod(watched, victim), "Ready"), 30, f"{victim} not Ready", interval=0.5)
    gate = _gate(watched, victim)
    assert gate["reason"] == keys.RecoveryGateReason.WRITABLE_STANDBY and "leads the shard" in gate["message"]
    assert facts.labels(_pod(watched, victim)).get(keys.LABEL_ROLE) == keys.Role.REPLICA
    wait_for(lambda: _condition(watched, keys.ShardCondition.WRITABLE_STANDBY).get("status") == "True", 120,
             "WritableStandby=True on the shard", interval=1)
    assert (_shard(watched).get("status") or {}).get("phase") == "Degraded"
    assert str(stack.pooler_ids()[victim]) in _condition(watched, keys.ShardCondition.WRITABLE_STANDBY)["message"]
    assert events_about(stack, keys.ShardCondition.WRITABLE_STANDBY, victim), "a Warning event on the pod"
    watched.load.wait_for_acks(50, timeout=120)  # the leader still takes writes

    # What v0.1.0 does next varies. Mostly multiorch leaves the pod writable, and recreated it comes back
    # in recovery (the start check writes standby.signal). While the topology still records its pooler
    # as PRIMARY (an old primary just replaced, as the switchover test leaves one), multiorch takes it
    # for a stale leader, points it at the leader and pg_rewinds it, and the rewound PostgreSQL fails
    # every start as a standby: the promotion archived a new timeline into the shard's repository (and
    # the rewind kept its history file in pg_wal), and recovery follows the newest timeline it finds.
    # The runbook (docs/operations.md) holds on both paths: recreate, remove the stray timeline from
    # the repository, decommission.
    uid = facts.uid(_pod(watched, victim))
    kube = stack.kube()
    try:
        kube.delete("v1", "Pod", stack.namespace, victim)
    finally:
        kube.close()
    wait_for(functools.partial(_recreated, watched, victim, uid), 180, f"{victim} recreated", interval=1)

    def back() -> str | None:
        if _gate(watched, victim).get("reason") == keys.RecoveryGateReason.STANDBY and _in_recovery(watched, victim):
            return "in recovery"
        return "rewound" if STRAY_TIMELINE_FATAL in _postgres_log_tail(stack, victim) else None

    path = wait_for(back, 180, f"{victim} back in recovery, or rewound by multiorch onto the stray timeline",
                    interval=1, last_seen=lambda: _postgres_log_tail(stack, victim))
    print(f"{victim} after its recreation: {path}")
    wait_for(lambda: _condition(watched, keys.ShardCondition.WRITABLE_STANDBY).get("status") == "False", 120,
             "WritableStandby=False on the shard", interval=1)

    # The promotion archived a new timeline into the shard's repository: a new replica restoring from it
    # would follow that timeline and never start. The runbook's step: remove every timeline past the
    # primary's from the repository.
    primary = stack.primary()
    assert primary is not None
    # The timeline it writes now: the control file's checkpoint keeps the one before a promotion until
    # the next checkpoint ends (minutes after the switchover step), and removing "past" that would
    # remove the primary's own timeline from the repository.
    with psycopg.connect(stack.dsn(primary.ip, SHARD), connect_timeout=3, autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()
    assert row is not None
    removed = _remove_timelines_after(stack, int(str(row[0])[:8], 16))
    assert any(name.endswith(".history") for name in removed), f"the promotion archived no timeline: {removed}"

    # Its own timeline diverged at the promotion: a decommission gives the shard a fresh standby instead.
    generation = _set_list(watched, "decommission", [victim])
    converge(stack, generation, replicas=3, timeout=600)
    wait_for(lambda: victim not in {facts.name(p) for p in stack.pods()}, 300, f"{victim} to be gone", interval=1)
    stack.wait_serving(SHARD, replicas=3, timeout=300)
    assert_nothing_lost(watched)


def test_a_postgres_config_set_on_a_live_shard_reaches_every_postgresql(watched: Watched) -> None:
    """v0.1.0's pgctld writes postgresql.conf once, at initdb: a `postgresConfig` set on a running shard
    rolls its pods, and only the start check's include (render/pool_v0_1.py) makes each restarted
    PostgreSQL read it. The shard was created without one; afterwards every pod runs with it, under
    write load, nothing lost."""
    stack = watched.stack
    setting, value = "wal_retrieve_retry_interval", "1s"
    before = setting_on_every_pod(stack, setting)
    assert set(before.values()) == {"5s"}, before  # PostgreSQL's default
    generation = apply(stack, lambda spec: spec.update(postgresConfig={setting: value}))
    converge(stack, generation, replicas=3, timeout=600)
    wait_for(lambda: setting_on_every_pod(stack, setting) == dict.fromkeys(before, value), 300,
             f"{setting} = {value} on every pod", interval=2,
             last_seen=lambda: str(setting_on_every_pod(stack, setting)))
    assert_nothing_lost(watched)
