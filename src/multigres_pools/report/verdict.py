"""The judgement of the status screen, pure: one state with what it rests on, and what needs attention.

States, worst first: Degraded (the engine says so, something is stuck or stalled, or the poolers
answered and none is a confirmed primary), Unknown (the data plane did not answer here), Paused,
Reconciling (work in progress: drains, pods starting, a rolling update, a generation not yet
observed), Warning (everything serves, something needs a look), Healthy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from .model import Condition, Report, Sync

C = keys.ShardCondition
HEALTHY, RECONCILING, PAUSED, WARNING, DEGRADED, UNKNOWN = (
    "Healthy", "Reconciling", "Paused", "Warning", "Degraded", "Unknown")
STATES = (HEALTHY, RECONCILING, PAUSED, WARNING, DEGRADED, UNKNOWN)
# Keyed by ShardCondition (a StrEnum), so the plain type string a status carries finds its entry.
_ATTENTION = cast(Mapping[str, str], keys.SHARD_CONDITION_ATTENTION)
# Conditions that say the shard is stuck, not merely busy, while True.
_STUCK = (C.STALLED, C.PODS_STUCK, C.AGENT_STALLED, C.DRAIN_STALLED, C.TOPOLOGY_UNREACHABLE, C.WRITABLE_STANDBY)
# Ready=False and Available=False with these reasons only restate "n/m pods ready" while work goes on:
# the headline and the pod table say which pod and why.
_PROGRESS_REASONS = {C.READY.value: "Progressing", C.AVAILABLE.value: "NotAllPodsReady"}
NO_PRIMARY = "no confirmed primary"
BELOW_POLICY = "commits wait: too few synchronous standbys stream for the durability policy"
DETACHED = "listed as a synchronous standby, but not streaming from the primary"
HEADLINE_REASONS = 3


@dataclass(frozen=True)
class Verdict:
    state: str
    reasons: list[str]  # what the state rests on, most important first

    def headline(self, report: Report) -> str:
        shown = self.reasons[:HEADLINE_REASONS]
        more = len(self.reasons) - len(shown)
        return (f"{report.namespace}/{report.shard}: {self.state} — {'; '.join(shown)}"
                + (f"; {more} more below" if more else ""))


def durability_words(required: int, multi_cell: bool) -> str:
    return f"at least {required} {'cells' if multi_cell else 'poolers'}, the primary included"


def _says(c: Condition) -> str:
    return f"{c.type}: {c.message or c.reason}"


def conditions_needing_attention(report: Report) -> list[Condition]:
    return [c for c in report.conditions if _ATTENTION.get(c.type) == c.status
            and _PROGRESS_REASONS.get(c.type) != c.reason]


def attention(report: Report) -> list[str]:
    """Everything that waits or is wrong, one line each, with its full message."""
    out = [_says(c) for c in conditions_needing_attention(report)]
    out += [f"pod {p.name}: drain {p.drain} blocked: {p.blocked}" for p in report.pods if p.blocked]
    out += [f"pod {p.name}: listed for decommission, waiting for its replacement and drain"
            for p in report.pods if p.decommission and not p.drain]
    backups, plane = report.backups, report.data_plane
    if backups.waiting:
        out.append(f"backup: {backups.waiting}")
    if backups.last and backups.last.error:
        out.append(f"last backup failed: {backups.last.error}")
    if report.clone is not None and report.clone.state == "Failed":
        out.append(f"clone of {report.clone.source}: the copy of its repository failed (tried again): "
                   f"{report.clone.message}")
    if not plane.reached:
        out.append(f"data plane: {plane.error}" + (f" — {plane.hint}" if plane.hint else ""))
        return out
    out += [f"pooler {p.pod} at {p.address or '(no address published)'} did not answer: {p.error}"
            for p in plane.unanswered]
    out += [f"pod {p.name}: {DETACHED}" for p in report.pods if p.sync is Sync.DETACHED]
    if report.replication.primary is None:
        named = report.replication.named_leader
        out.append(f"{NO_PRIMARY}: " + (f"the newest consensus rule names {named}, which does not confirm it "
                                        "(failover in progress?)" if named
                                        else "failover in progress, or the shard is not bootstrapped"))
    if report.replication.durable is False and report.replication.durability is not None:
        policy = report.replication.durability
        out.append(f"{BELOW_POLICY}: it needs {durability_words(policy.required, policy.multi_cell)}, counting "
                   "the primary and the cohort members streaming now")
    out += plane.problems
    return out


def _degraded(report: Report) -> list[str]:
    said = report.message if report.phase == "Degraded" else ""
    out = [said or "the engine reports the shard Degraded"] if report.phase == "Degraded" else []
    # The phase message is often a condition's message: said once.
    out += [_says(c) for c in report.conditions if c.type in _STUCK and c.status == "True" and c.message != said]
    if report.data_plane.reached and report.replication.primary is None:
        out.append(NO_PRIMARY)
    if report.replication.durable is False:
        out.append(BELOW_POLICY)
    out += [f"{pod}: PostgreSQL is not running and its multipooler is stuck starting it"
            for pod in report.data_plane.stuck_starts]
    return out


def _activity(report: Report) -> list[str]:
    out = []
    if report.observed_generation is not None and report.generation > report.observed_generation:
        out.append(f"generation {report.generation} not yet acted on (the status is of {report.observed_generation})")
    for pod in report.pods:
        if pod.drain:
            out.append(f"draining {pod.name}" + (f" ({pod.drain_reason})" if pod.drain_reason else ""))
        elif pod.terminating:
            out.append(f"{pod.name} terminating")
        elif not pod.ready:
            out.append(f"{pod.name} not ready ({pod.phase})")
    for ctype, label in ((C.ROLLING_UPDATE, "rolling update"), (C.WAITING_FOR_MAINTENANCE_WINDOW, "waiting for "
                         "a maintenance window"), (C.SCALE_DOWN_BLOCKED, "scale-down blocked")):
        cond = report.condition(ctype)
        if cond and cond.status == "True":
            out.append(f"{label}: {cond.message}" if cond.message else label)
    busy = report.condition(C.RECONCILING)
    if not out and ((busy and busy.status == "True") or report.phase in ("Progressing", "Initializing")):
        out.append((busy.message if busy and busy.status == "True" else "") or report.message or "progressing")
    return out


def judge(report: Report) -> Verdict:
    if degraded := _degraded(report):
        return Verdict(DEGRADED, degraded)
    plane = report.data_plane
    if not plane.reached:
        return Verdict(UNKNOWN, ["the data plane did not answer from here (see Needs attention)"])
    paused = report.condition(C.PAUSED)
    if paused and paused.status == "True":
        return Verdict(PAUSED, [paused.message or paused.reason])
    if activity := _activity(report):
        return Verdict(RECONCILING, activity)
    if needs := attention(report):
        return Verdict(WARNING, needs)
    serving = sum(p.ready for p in report.pods)
    return Verdict(HEALTHY, [f"{serving}/{len(report.pods)} pods serving, primary {report.replication.primary}"])
