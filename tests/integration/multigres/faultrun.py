"""Plays a seeded schedule of data-plane faults (multigres_pools.playground.faults) against a watched
stack on real Multigres v0.1.0, records a History beside it, and judges that with history_check.

After each fault the run waits for the shard to serve again at full strength (one primary, every
other pod a synchronous standby) and for the write load to be acknowledged again, so each fault
meets a whole shard and its unavailability is its own. A fault the shard does not come back from
fails the run there, after the table of what was seen so far is printed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.playground import faults
from multigres_pools.playground.history import Deletion, History, RoleSample, SyncSample
from multigres_pools.playground.history_check import Verdict, check
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import Member, MultigresStack
from multigres_pools.playground.writeload import TABLE

from .safety import (
    SHARD,
    Watched,
    app_names,
    apply,
    backup_state,
    converge,
    finished_backup,
    first_terminating,
    note,
    request_backup,
    scale,
    shard_cr,
    uids,
    watched_stack,
)

DRAINING_STANDBY = "postgres-kill-draining-standby"
BACKING_UP = "postgres-kill-backing-up"
# A rolling update whose first drained standby and then the primary (as its own drain starts) have
# their PostgreSQL SIGKILLed: a kind of its own schedule (ROLLING_KINDS), each one replaces every pod.
DURING_ROLL = "postgres-kill-during-roll"
ROLLING_KINDS = {DURING_ROLL: False}
# Kinds, and whether they are held (healed after a pause) or instant (a kill: the pod's supervisor heals).
KINDS = {"postgres-kill-primary": False, DRAINING_STANDBY: False, BACKING_UP: False, "multiorch-kill": False,
         "freeze-primary": True, "partition-primary": True, "agent-topology-isolation": True,
         "disk-full-primary": True, "disk-full-standby": True, "slow-disk-primary": True, "slow-disk-standby": True,
         "corrupt-standby-volume": False}
# A cut between cells (faults.cell_partition) on a shard over two: the primary's cell from the other, or
# the other from the primary's (the client's multigateway is the first by name, so the two differ).
PRIMARY_CELL, STANDBY_CELL = "partition-primary-cell", "partition-standby-cell"
CELL_KINDS = {PRIMARY_CELL: True, STANDBY_CELL: True}
# fault_stack(sized_claims=True): the kinds that fill or slow a volume of its own
NEEDS_SIZED_CLAIMS = {"disk-full-primary", "disk-full-standby", "slow-disk-primary", "slow-disk-standby"}
ALL_KINDS = {**KINDS, **ROLLING_KINDS, **CELL_KINDS}
SLOW_IOPS = 2  # writes per second a slowed volume takes (each COMMIT's WAL flush is one or more)
RECOVER_S = 300.0  # to serve at full strength again after one fault, on two shared cores
# A PostgreSQL that stays down (v0.1.0 on a full standby's disk) is replaced after this many seconds,
# not the default 120: a soak of 100 faults has half a minute per fault (plan/stuck.py).
STUCK_START_AFTER_S = 20
# The process kubelet's crash-loop delay in the fault runs (first, max), in seconds; a real kubelet's is
# 10 s doubling to 5 min, reset after 10 min of running: a schedule that SIGKILLs multiorch every few
# minutes would then measure that back-off (a 5-min wait by the 7th kill), not the shard.
KUBELET_BACKOFF = (2.0, 20.0)


@dataclass(frozen=True)
class Schedule:
    """One seeded fault run's defaults; FAULT_SEED, FAULT_KINDS (a subset of `kinds`), FAULT_HOLD_MAX
    and `count_var` override them for one run."""

    name: str  # the stack's working directory
    kinds: tuple[str, ...]
    seed: int
    count: int
    count_var: str = "FAULT_COUNT"
    replicas: int = 3
    shard: Callable[[MultigresStack], dict[str, Any]] | None = None  # default: the sample shard, `replicas` pods
    # The longest a held fault lasts. multiorch's failover grace is 4 s plus up to 8 s of jitter, so
    # longer holds let it fail over while the old primary is frozen or cut off.
    hold_max_s: float = 8.0
    # Samples with two servers out of recovery are reported, not failed on (Verdict.problems); only for
    # a schedule where v0.1.0 is known to do so with its consensus keeping the old one from acknowledging.
    two_writable_allowed: bool = False

    def chosen_kinds(self) -> tuple[str, ...]:
        """This schedule's kinds that FAULT_KINDS names (all when it is unset); a kind no schedule has
        is an error, a FAULT_KINDS naming only other schedules' kinds skips this one."""
        named = faults.choose_kinds(os.environ.get("FAULT_KINDS", ""), tuple(ALL_KINDS))
        chosen = tuple(k for k in self.kinds if k in named)
        if not chosen:
            pytest.skip(f"FAULT_KINDS names none of this schedule's kinds ({', '.join(self.kinds)})")
        return chosen

    def chosen_seed(self) -> int:
        return int(os.environ.get("FAULT_SEED", str(self.seed)))

    def chosen_count(self) -> int:
        return int(os.environ.get(self.count_var, str(self.count)))

    def chosen_hold_max(self) -> float:
        return float(os.environ.get("FAULT_HOLD_MAX", str(self.hold_max_s)))

    def reproduce_command(self, test: str) -> str:
        """One command that plays the same schedule again (`test`: the test file), from the repository root."""
        kinds = f"FAULT_KINDS={os.environ['FAULT_KINDS']} " if os.environ.get("FAULT_KINDS") else ""
        return (f"{kinds}FAULT_SEED={self.chosen_seed()} {self.count_var}={self.chosen_count()} "
                f"FAULT_HOLD_MAX={self.chosen_hold_max():g} .venv/bin/python -m pytest -p no:cacheprovider -s -x "
                f"{os.path.relpath(test)}")


class FaultRun:
    def __init__(self, watched: Watched, history: History, replicas: int) -> None:
        self.watched, self.stack, self.history, self.replicas = watched, watched.stack, history, replicas
        self.started = time.monotonic()
        self.names: dict[str, str] = {}  # uid -> standby name of every pool pod seen
        self.deleted: set[str] = set()  # uids whose deletion is in the history
        self.backups: list[dict[str, Any]] = []  # how each backup interrupted by a fault ended
        self.rolls = 0  # rolling updates started, for a new spec each time

    def log(self, what: str) -> None:
        print(f"[faults {time.monotonic() - self.started:7.1f}s] {what}", flush=True)

    def primary(self) -> Member:
        return wait_for(self.stack.primary, 120, "one primary", interval=0.5)

    def play(self, schedule: list[faults.Planned]) -> None:
        for number, step in enumerate(schedule, 1):
            time.sleep(step.pause_s)
            self.log(f"fault {number}/{len(schedule)}: {step.kind}, held {step.hold_s}s")
            before = uids(self.stack)
            self.names.update(app_names(self.stack))
            leader = self.primary().pod
            if step.kind == DRAINING_STANDBY:
                self._kill_a_draining_standby(before)
            elif step.kind == BACKING_UP:
                self._kill_the_pod_taking_a_backup()
            elif step.kind == DURING_ROLL:
                self._kill_during_a_roll(before)
            else:
                self._inject(step.kind, step.hold_s)
            self._wait_recovered(step.kind)
            self._record_deletions({uid: name for uid, name in before.items() if name != leader})

    def _record_deletions(self, standbys: dict[str, str]) -> None:
        """Every standby the fault's recovery replaced (a drain for a scale-down, a roll, or a PostgreSQL
        that stayed down) goes into the history: the checker proves none was still a synchronous standby.
        The primary of the fault's start is left out: v0.1.0's primary names itself in its own
        synchronous_standby_names, and its replacement is a handover (never two writable, no write lost)."""
        for uid, name in standbys.items():
            moment = first_terminating(self.watched, uid)
            if moment is not None and uid not in self.deleted:
                self.deleted.add(uid)
                self.history.deletions.append(Deletion(moment, self.names[uid]))
                self.log(f"  {name} replaced: {' -> '.join(self.watched.timeline.drain_states(uid)) or 'no drain'}")

    def _inject(self, kind: str, hold_s: float) -> None:
        primary = self.primary()
        injector: AbstractContextManager[Any]
        target = primary.pod
        if kind == "postgres-kill-primary":
            injector = faults.postgres_kill(self.stack, primary.ip)
        elif kind == "multiorch-kill":
            injector, target = faults.multiorch_kill(self.stack), "multiorch"
        elif kind == "freeze-primary":
            injector = faults.freeze(self.stack, primary.ip)
        elif kind == "partition-primary":
            standbys = [ip for _, ip in self.stack.pool_addresses() if ip != primary.ip]
            injector = faults.partition(self.stack, primary.ip, standbys)
        elif kind == "agent-topology-isolation":
            injector, target = faults.topology_isolation(self.stack), "agent"
        elif kind == "disk-full-primary":
            injector = faults.disk_full(self.stack, primary.pod)
        elif kind == "disk-full-standby":
            target = self._a_standby(primary)[0]
            injector = faults.disk_full(self.stack, target)
        elif kind == "corrupt-standby-volume":
            target, address = self._a_standby(primary)
            injector = faults.corrupt_volume(self.stack, target, address)
        elif kind == "slow-disk-primary":
            injector = faults.slow_disk(self.stack, primary.pod, primary.ip, SLOW_IOPS)
        elif kind == "slow-disk-standby":
            target, address = self._a_standby(primary)
            injector = faults.slow_disk(self.stack, target, address, SLOW_IOPS)
        elif kind in CELL_KINDS:
            own = self.stack.pooler_ids()[primary.pod].cell
            target = own if kind == PRIMARY_CELL else min(set(self.stack.cell_addresses()) - {own})
            injector = faults.cell_partition(self.stack, target)
        else:
            raise ValueError(f"fault kind {kind!r} is not one of {', '.join(ALL_KINDS)}")
        with self._recorded(kind, target), injector as what:
            self.log(f"  injected on {target}: {what}")
            time.sleep(hold_s)

    def _a_standby(self, primary: Member) -> tuple[str, str]:
        """The first standby by name, and its address."""
        return min((name, ip) for name, ip in self.stack.pool_addresses() if ip != primary.ip)

    @contextlib.contextmanager
    def _recorded(self, kind: str, target: str) -> Iterator[None]:
        self.history.fault(kind, "start", target)
        try:
            yield
        finally:
            self.history.fault(kind, "end", target)

    def _kill_a_draining_standby(self, before: dict[str, str]) -> None:
        """A scale-down by one; the standby it drains has its PostgreSQL SIGKILLed mid-drain; then
        back up, so the next fault meets a whole shard again."""
        generation = scale(self.stack, self.replicas - 1)
        timeline = self.watched.timeline
        uid = wait_for(lambda: next((u for u in before if {"draining", "acknowledged"} & set(timeline.drain_states(u))),
                                    None), 300, "a standby's drain to start", interval=0.05)
        address = self.stack.kubelet.pod_ip(self.stack.namespace, before[uid]) if self.stack.kubelet else None
        assert address, f"{before[uid]} has no address"
        role = "the primary" if address == self.stack.primary_ip() else "a standby"
        with self._recorded(DRAINING_STANDBY, before[uid]), faults.postgres_kill(self.stack, address) as pid:
            self.log(f"  {before[uid]} ({role}) in {timeline.drain_states(uid)[-1]}: postmaster {pid} SIGKILLed")
        converge(self.stack, generation, replicas=self.replicas - 1)
        converge(self.stack, scale(self.stack, self.replicas), replicas=self.replicas)

    def _kill_the_pod_taking_a_backup(self) -> None:
        """An on-demand full backup; the PostgreSQL of the pod taking it is SIGKILLed while it runs.
        The backup must end (failed or done, never left running) before the next fault."""
        previous = ((shard_cr(self.stack).get("status") or {}).get("backup") or {}).get("last") or {}
        request_backup(self.stack, keys.BackupType.FULL.value, "fault-run")
        running = wait_for(lambda: backup_state(self.stack).get("running"), 120, "the requested backup to start",
                           interval=0.05)
        address = self.stack.kubelet.pod_ip(self.stack.namespace, running["pod"]) if self.stack.kubelet else None
        assert address, f"{running['pod']} has no address"
        with self._recorded(BACKING_UP, running["pod"]), faults.postgres_kill(self.stack, address) as pid:
            self.log(f"  {running['pod']} takes a {running.get('type', '?')} backup: postmaster {pid} SIGKILLed")
        last = wait_for(lambda: finished_backup(self.stack, "request", previous.get("startedAt", "")), RECOVER_S,
                        "the interrupted backup to end", interval=1)
        self.backups.append(last)
        self.log(f"  the backup ended: {last.get('error') or 'complete, ' + str(last.get('backupId'))}")

    def _kill_during_a_roll(self, before: dict[str, str]) -> None:
        """A new multipooler CPU request rolls every pod; the first standby it drains and then the
        primary, when its own drain starts, have their postmasters SIGKILLed mid-drain."""
        self.rolls += 1
        generation = apply(self.stack, lambda spec: spec["pools"]["default"].update(
            multipooler={"resources": {"requests": {"cpu": f"{20 + self.rolls}m"}}}))
        primary = self.primary()
        primary_uid = next(uid for uid, name in before.items() if name == primary.pod)
        standbys = [uid for uid in before if uid != primary_uid]
        for uids_, role in ((standbys, "a standby"), ([primary_uid], "the primary")):
            uid = wait_for(lambda us=uids_: next((u for u in us if {"draining", "acknowledged"}
                                                  & set(self.watched.timeline.drain_states(u))), None),
                           600, f"{role}'s drain in the roll", interval=0.05)
            address = self.stack.kubelet.pod_ip(self.stack.namespace, before[uid]) if self.stack.kubelet else None
            assert address, f"{before[uid]} has no address"
            with self._recorded(DURING_ROLL, before[uid]), faults.postgres_kill(self.stack, address) as pid:
                self.log(f"  {before[uid]} ({role}) in {self.watched.timeline.drain_states(uid)[-1]} of the roll: "
                         f"postmaster {pid} SIGKILLed")
        converge(self.stack, generation, replicas=self.replicas)

    def _wait_recovered(self, kind: str) -> None:
        started = time.monotonic()
        if kind == "multiorch-kill":  # the next fault meets a running multiorch
            wait_for(self.stack.orchestrator_pids, RECOVER_S, "multiorch running again", interval=0.2)
        self.stack.wait_serving(SHARD, replicas=self.replicas, timeout=RECOVER_S)
        self.watched.load.wait_for_acks(5, timeout=RECOVER_S)
        self.log(f"  {kind}: serving at full strength again after {time.monotonic() - started:.1f}s")

    # --- the verdict --------------------------------------------------------------------------------
    def verdict(self) -> Verdict:
        """Stops the write load, reads every row on the primary, and judges the history."""
        self.watched.load.stop()
        primary = self.primary()
        password = self.stack.password(SHARD)
        with psycopg.connect(self.stack.dsn(primary.ip, password=password), connect_timeout=5) as conn:
            present = {row[0] for row in conn.execute(f"SELECT id FROM {TABLE}").fetchall()}
        self.history.roles += [RoleSample(s.at, s.writable, s.answered) for s in list(self.watched.recovery.samples)]
        self.history.sync += [SyncSample(s.at, s.synchronous_standby_names) for s in list(self.watched.sync.samples)]
        return check(self.history, present)


def report(run: FaultRun, verdict: Verdict, schedule: Schedule, test: str) -> None:
    note("faults: seed", f"{schedule.chosen_seed()} (reproduce: {schedule.reproduce_command(test)})")
    note("faults: writes", f"{verdict.acknowledged} acknowledged, {len(verdict.lost)} lost, "
                           f"{len(verdict.indeterminate)} indeterminate ({len(verdict.indeterminate_present)} of "
                           f"them written after all); errors {dict(run.watched.load.errors)}")
    note("faults: client errors", sorted(run.watched.load.error_texts))
    for fault in verdict.faults:
        note("faults: fault", f"{fault.kind} on {fault.target} at {fault.start - run.started:.1f}s: "
                              f"survived {fault.survived}, unavailable {fault.unavailable_s}s")
    print(verdict.table(), flush=True)
    note("faults: problems", verdict.problems(two_writable_allowed=schedule.two_writable_allowed) or "none")


def judged_run(workdir: Path, schedule: Schedule, test: str) -> Verdict:
    """Starts a shard under a write load through the multigateway that records its history (its
    claims filesystems of their own when a kind fills or slows one), plays the schedule, prints the
    table, and requires the checker to find no problem, every fault survived and nothing of a fault
    left (no nftables table, no stopped process, no filler, no throttle cgroup)."""
    faults.sweep_tables()
    kinds = schedule.chosen_kinds()
    history = History()
    def sample(stack: MultigresStack) -> dict[str, Any]:
        return stack.sample_shard(replicas=schedule.replicas, name=SHARD)

    shard = schedule.shard or sample
    with watched_stack(workdir, shard, schedule.replicas, through_gateway=True, history=history,
                       sized_claims=bool(NEEDS_SIZED_CLAIMS & set(kinds)),
                       agent_args=("--stuck-start-after", str(STUCK_START_AFTER_S)),
                       kubelet_backoff=KUBELET_BACKOFF) as watched:
        planned = faults.plan(schedule.chosen_seed(), kinds, schedule.chosen_count(),
                              instant=[k for k in kinds if not ALL_KINDS[k]], hold_s=(2.0, schedule.chosen_hold_max()))
        note("faults: schedule", f"seed {schedule.chosen_seed()}: {[(s.kind, s.pause_s, s.hold_s) for s in planned]}")
        run = FaultRun(watched, history, schedule.replicas)
        try:
            run.play(planned)
        except BaseException:
            with contextlib.suppress(Exception):  # what was seen until then, for the report
                report(run, run.verdict(), schedule, test)
            assert faults.leftovers(watched.stack) == []
            raise
        verdict = run.verdict()
        report(run, verdict, schedule, test)
        assert faults.leftovers(watched.stack) == []
    if verdict.two_primaries:
        note("faults: samples with two servers out of recovery", f"{len(verdict.two_primaries)}, "
             f"{verdict.two_primaries[0][0] - run.started:.1f}-{verdict.two_primaries[-1][0] - run.started:.1f}s "
             f"into the run: {sorted({pod for _, pods in verdict.two_primaries for pod in pods})}")
    assert verdict.problems(two_writable_allowed=schedule.two_writable_allowed) == []
    assert verdict.acknowledged > 0 and all(f.survived for f in verdict.faults)
    return verdict
