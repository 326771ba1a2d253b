"""A clone's first primary (spec.backup.cloneFrom, Multigres v0.1.0; docs/agent.md "Clone: the first primary").

The engine copies the source's repository into the clone's backup volume (keys.ANN_CLONE, state
Copied); every pool pod then restores the newest backup, replays the copied WAL archive and stays a
REPLICA. The restored rule names the source's cohort, so v0.1.0's multiorch never elects and reports
nothing (docs/operations.md, "Clone a shard"). Once every live pod's pooler is such a replica and
the highest WAL position stayed put for SETTLE_S (the archive is exhausted), the agent sends one
certified rule change through one of the shard's multiorchs (dataplane/certified_rule.py) and keeps
the outcome on the MultigresShard as keys.ANN_CLONE_ELECTION (JSON, keys.ElectionState).

`decide` is pure: from the shard, its pods' poolers, their Status answers and the previous WAL read
to what to write or send; `CloneElections.step` does the reading and the writing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import clone, facts

from ..dataplane.base import DataPlaneError, Pooler, PoolerId, RefusalReason, RuleChange
from ..dataplane.certified_rule import Restored, refusal
from . import podinfo, trust
from .context import Context, ShardView
from .handover import orchestrator_prefixes
from .kube import now_rfc3339

Election = keys.ElectionState
# Two reads of the highest WAL position this far apart and equal: the replay of the copied archive is
# over (its last segment is replayed at once; archive_timeout keeps segments coming only on the source).
SETTLE_S = 3.0
# A failed attempt is retried after RETRY_FIRST_S, doubling per attempt up to RETRY_MAX_S: each attempt
# raises the term, and a cause that outlives one pass (a multiorch restarting, a pooler refusing) would
# otherwise cost a term, a record and a Warning event every pass.
RETRY_FIRST_S, RETRY_MAX_S = 5.0, 300.0


@dataclass(frozen=True)
class Reading:
    """The highest WAL position the clone's poolers reported (bytes), and since when it has been that."""

    lsn: int
    since: float


@dataclass(frozen=True)
class Decision:
    """What the pass does: write `record` (None: leave the annotation), or send the change over `elect`
    (attempt `attempt`); `reading` is what to remember of the WAL position (None: forget it)."""

    record: dict[str, Any] | None = None
    elect: tuple[Restored, ...] = ()
    attempt: int = 0
    reading: Reading | None = None


@dataclass(frozen=True)
class LivePod:
    """A live pool pod of the shard and its registered pooler (None: not registered yet)."""

    name: str
    pooler: Pooler | None


def pending(shard: Manifest | None, election: Mapping[str, Any]) -> bool:
    """The shard is a clone whose copy is done and whose first primary is not recorded yet."""
    return clone.copied(shard) and election.get("state") != Election.ELECTED


def decide(shard: Manifest | None, election: Mapping[str, Any], pods: Sequence[LivePod],
           answers: Mapping[PoolerId, Restored | DataPlaneError], primary: PoolerId | None,
           previous: Reading | None, now: float) -> Decision:
    """The step for one pass. `election` is the current record; `answers` each registered pooler's
    Status; `primary` the shard's confirmed primary among its own poolers."""
    if not pending(shard, election):
        return Decision()
    at = now_rfc3339(now)
    if primary is not None:  # elected already (by us before a crash, or by multiorch after a partial try)
        return Decision({"state": Election.ELECTED.value, "leader": f"{primary.cell}_{primary.name}", "at": at,
                         "message": f"{primary.cell}_{primary.name} is the primary of this shard's own cohort"})
    restored, missing = _restored(pods, answers)
    missing = missing or refusal(restored)
    if missing is not None:
        return _waiting(election, missing, at)
    highest = max(facts.lsn_bytes(p.lsn) or 0 for p in restored)
    if previous is None or previous.lsn != highest:
        return _waiting(election, _REPLAYING, at, Reading(highest, now))
    if now - previous.since < SETTLE_S:
        return _waiting(election, _REPLAYING, at, previous)
    until = retry_at(election)
    if until is not None and now < until:
        return Decision(reading=previous)  # the Failed record stays: it says what failed
    return Decision(elect=tuple(restored), attempt=next_attempt(election), reading=previous)


_REPLAYING = (f"the poolers replay the copied WAL archive: the highest WAL position must stay put for {SETTLE_S:g}s "
              "before this shard's own cohort is elected")


def next_attempt(election: Mapping[str, Any]) -> int:
    """0, or one past the last attempt: a pooler refuses a second revocation at a term it accepted."""
    last = election.get("attempt")
    return int(last) + 1 if isinstance(last, int) else 0


def retry_delay(attempt: int) -> float:
    """Seconds between failed attempt `attempt` and the next one."""
    return min(RETRY_FIRST_S * 2.0 ** max(attempt, 0), RETRY_MAX_S)


def retry_at(election: Mapping[str, Any]) -> float | None:
    """When (epoch seconds) the attempt after a Failed record may go; None: no failure to wait out."""
    if election.get("state") != Election.FAILED:
        return None
    failed_at = facts.parse_time(str(election.get("at") or ""))
    attempt = election.get("attempt")
    if failed_at is None or not isinstance(attempt, int):
        return None
    return failed_at.timestamp() + retry_delay(attempt)


def _restored(pods: Sequence[LivePod], answers: Mapping[PoolerId, Restored | DataPlaneError],
              ) -> tuple[list[Restored], str | None]:
    """The live pods' answers, or what keeps them from all answering."""
    if not pods:
        return [], "no pool pod of this shard runs"
    out = []
    for pod in pods:
        if pod.pooler is None:
            return [], f"pod {pod.name} has no pooler registered in the topology yet"
        answer = answers.get(pod.pooler.id)
        if pod.pooler.stopped:
            return [], f"pooler {pod.pooler.id} of pod {pod.name} announced its shutdown"
        if answer is None:
            return [], f"pooler {pod.pooler.id} of pod {pod.name} was not asked"
        if isinstance(answer, DataPlaneError):
            return [], f"pooler {pod.pooler.id} of pod {pod.name} did not answer: {answer.message}"
        out.append(answer)
    return out, None


def _waiting(election: Mapping[str, Any], message: str, at: str, reading: Reading | None = None) -> Decision:
    """Waiting, written only when the reason changes; a Failed record stays (it says what failed) until
    the next attempt replaces it."""
    if election.get("state") == Election.FAILED or (
            election.get("state") == Election.WAITING and election.get("message") == message):
        return Decision(reading=reading)
    record = {"state": Election.WAITING.value, "message": message, "at": at}
    if "attempt" in election:
        record["attempt"] = election["attempt"]
    return Decision(record, reading=reading)


def elected(change: RuleChange, source: str, attempt: int, at: str) -> dict[str, Any]:
    leader = f"{change.leader.cell}_{change.leader.name}"
    return {"state": Election.ELECTED.value, "term": change.term, "leader": leader, "frozenLsn": change.frozen_lsn,
            "outgoingRule": f"{change.outgoing[0]}/{change.outgoing[1]}", "attempt": attempt, "at": at,
            "message": f"{leader} is the first primary of this shard's own cohort (term {change.term}; the rule "
                       f"{change.outgoing[0]}/{change.outgoing[1]} restored from {source} revoked at "
                       f"{change.frozen_lsn})"}


def failed(message: str, attempt: int, at: str) -> dict[str, Any]:
    return {"state": Election.FAILED.value, "message": message, "attempt": attempt, "at": at}


@dataclass
class CloneElections:
    """The step in the agent's shard pass, with what it remembers between passes (by shard uid)."""

    ctx: Context
    _readings: dict[str, Reading] = field(default_factory=dict)
    # The record this process last wrote: a MultigresShard read before that write must not undo it.
    _written: dict[str, dict[str, Any]] = field(default_factory=dict)

    def step(self, view: ShardView) -> None:
        shard = view.shard
        if shard is None or keys.ANN_CLONE not in podinfo.annotations(shard):
            return  # not a clone: one lookup
        uid = podinfo.uid(shard) or podinfo.name(shard)
        election = self._written.get(uid) or clone.election(shard)
        if not pending(shard, election) or view.poolers is None or view.dataplane is None or podinfo.deleting(shard):
            return
        now = self.ctx.clock()
        pods = [LivePod(podinfo.name(p), view.own(p)) for p in view.pods if not podinfo.deleting(p)]
        try:
            answers = {p.id: r for p, r in view.dataplane.restored([p.pooler for p in pods if p.pooler])}
        except DataPlaneError as exc:  # Multigres era A: no clone
            self._write(view, uid, _waiting(election, exc.message, now_rfc3339(now)).record)
            return
        decision = decide(shard, election, pods, answers, self._primary(view), self._readings.get(uid), now)
        if decision.reading is None:
            self._readings.pop(uid, None)
        else:
            self._readings[uid] = decision.reading
        if decision.record is not None:
            self._write(view, uid, decision.record)
        elif decision.elect:
            self._elect(view, uid, decision, election)

    @staticmethod
    def _primary(view: ShardView) -> PoolerId | None:
        """The confirmed primary (the pass's round of Status calls), if it is one of this shard's own poolers."""
        confirmed = view.leader()
        ours = confirmed is not None and trust.record_belongs(confirmed, view.topology, view.namespace)
        return confirmed.id if confirmed is not None and ours else None

    def _elect(self, view: ShardView, uid: str, decision: Decision, election: Mapping[str, Any]) -> None:
        ctx, shard, plane = self.ctx, view.shard, view.dataplane
        assert shard is not None and plane is not None  # step() checked both
        source = str(clone.record(shard).get("source") or "the source")
        try:
            orchestrators = plane.orchestrators(view.topology, orchestrator_prefixes(shard, view.topology.cells))
            if not orchestrators:
                raise DataPlaneError(RefusalReason.ORCHESTRATOR_UNREACHABLE,
                                     "no multiorch of this shard is registered in its cells")
        except DataPlaneError as exc:  # nothing was asked: no attempt spent
            self._write(view, uid, _waiting(election, exc.message, now_rfc3339(ctx.clock())).record)
            return
        # Another multiorch each attempt: a stale record of a replaced multiorch pod must not fail every try.
        orch = orchestrators[decision.attempt % len(orchestrators)]
        ctx.effect("certified-rule-change")
        try:
            change = plane.certified_rule_change(
                view.topology, orch, decision.elect, durability=podinfo.cr_database(shard, ()).durability_policy,
                reason=f"clone of {source} (multigres.pools)", now=dt.datetime.fromtimestamp(ctx.clock(), dt.UTC),
                attempt=decision.attempt)
        except DataPlaneError as exc:
            self._write(view, uid, failed(f"attempt {decision.attempt} through multiorch {orch.cell}/{orch.name} "
                                          f"failed: {exc.message}", decision.attempt, now_rfc3339(ctx.clock())))
            return
        self._write(view, uid, elected(change, source, decision.attempt, now_rfc3339(ctx.clock())))

    def _write(self, view: ShardView, uid: str, record: dict[str, Any] | None) -> None:
        """The record on the MultigresShard, and an event when the clone is elected or an attempt failed."""
        if record is None:
            return
        ctx, shard = self.ctx, view.shard
        assert shard is not None  # step() checked it
        ctx.effect("write:clone-election")
        ctx.kube.patch_shard_annotations(shard, {keys.ANN_CLONE_ELECTION: json.dumps(record, sort_keys=True)})
        self._written[uid] = record
        state, message = record["state"], str(record["message"])
        if state == Election.ELECTED:
            self._readings.pop(uid, None)
            ctx.log.info("clone elected", extra={"namespace": view.namespace, "detail": message})
            ctx.kube.event(shard, "CloneElected", message)
        elif state == Election.FAILED:
            ctx.log.warning("clone election failed", extra={"namespace": view.namespace, "detail": message})
            delay = retry_delay(int(record["attempt"]))
            ctx.kube.event(shard, "CloneElectionFailed", f"{message}; the agent tries again in {delay:g}s",
                           warning=True)
