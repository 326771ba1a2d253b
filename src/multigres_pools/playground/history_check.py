"""The independent checker of a fault run's `History`: it trusts nothing the system under test says
about itself, only what clients heard, what PostgreSQL answered, and which rows are there at the end.

Claims (each a list of counterexamples, empty when it holds):

- lost: an acknowledged (`ok`) write missing at the end;
- failed_but_present: a write the client was told failed (`fail`, before COMMIT) that is there;
- two_primaries: a role sample in which two pods were out of recovery;
- stale_acks: a write acknowledged in a lower timeline than one already acknowledged before it was
  even sent (an old primary still accepting writes after a new one did);
- overlapping_reigns: two servers whose acknowledgements interleave in time;
- deleted_in_sync_set: a pod deleted while the last synchronous_standby_names read before it still
  listed its standby.

Indeterminate writes (`info`, or an `invoke` with no answer) are reported, never counted as lost or
as kept. Unavailability per fault is the longest stretch without an acknowledged write that overlaps
the fault (from the last ack before it to the first after it).
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from .history import Fault, History, Op, Term

NO_FAULT = "(no fault)"


@dataclass(frozen=True)
class FaultOutcome:
    kind: str
    target: str
    start: float
    end: float
    survived: bool  # a write was acknowledged after the fault ended
    unavailable_s: float


@dataclass
class KindRow:
    kind: str
    injected: int = 0
    survived: int = 0
    acknowledged: int = 0
    lost: int = 0
    indeterminate: int = 0
    unavailable: list[float] = field(default_factory=list)

    @property
    def p50_s(self) -> float:
        return statistics.median(self.unavailable) if self.unavailable else 0.0

    @property
    def max_s(self) -> float:
        return max(self.unavailable, default=0.0)


@dataclass
class Verdict:
    acknowledged: int
    lost: list[int]
    indeterminate: list[int]
    indeterminate_present: list[int]  # of those, the ones that were written after all (reported, not judged)
    failed_but_present: list[int]
    two_primaries: list[tuple[float, tuple[str, ...]]]
    stale_acks: list[tuple[int, Term, Term]]  # (write, its term, the newer term acknowledged before it was sent)
    overlapping_reigns: list[tuple[Term, Term]]
    deleted_in_sync_set: list[tuple[float, str, str]]  # (when, standby, synchronous_standby_names)
    faults: list[FaultOutcome]
    rows: dict[str, KindRow]

    def problems(self, two_writable_allowed: bool = False) -> list[str]:
        """What the history breaks. `two_writable_allowed`: samples with two servers out of recovery are
        not a problem by themselves (a schedule where Multigres is known to leave a revoked primary
        writable for a moment); writes acknowledged by both are still caught by the term checks."""
        out = [f"{len(self.lost)} acknowledged writes lost: {self.lost[:10]}" if self.lost else "",
               f"{len(self.failed_but_present)} failed writes present: {self.failed_but_present[:10]}"
               if self.failed_but_present else "",
               f"{len(self.two_primaries)} samples with two primaries, first {self.two_primaries[0]}"
               if self.two_primaries and not two_writable_allowed else "",
               f"{len(self.stale_acks)} writes acknowledged in an older term, first {self.stale_acks[0]}"
               if self.stale_acks else "",
               f"reigns overlap: {self.overlapping_reigns[:3]}" if self.overlapping_reigns else "",
               f"pods deleted while in the synchronous set: {self.deleted_in_sync_set}"
               if self.deleted_in_sync_set else "",
               *(f"fault {f.kind} on {f.target} at {f.start:.1f}: no write acknowledged after it ended"
                 for f in self.faults if not f.survived)]
        return [p for p in out if p]

    def table(self) -> str:
        """The docs/reliability.md table, one line per fault kind."""
        lines = ["| Fault kind | Injected | Survived | Acknowledged writes | Lost | Indeterminate "
                 "| Unavailability p50 / max (s) |", "|---|---|---|---|---|---|---|"]
        for row in self.rows.values():
            lines.append(f"| {row.kind} | {row.injected} | {row.survived} | {row.acknowledged} | {row.lost} "
                         f"| {row.indeterminate} | {row.p50_s:.1f} / {row.max_s:.1f} |")
        return "\n".join(lines)


def standby_names(value: str) -> set[str]:
    """The names a synchronous_standby_names value lists (`ANY 1 ("a", b)`, `FIRST 2 (a)`, `a, b`)."""
    inner = value[value.index("(") + 1:value.rindex(")")] if "(" in value and ")" in value else value
    return {name.strip().strip('"') for name in inner.split(",") if name.strip().strip('"')}


def check(history: History, present: set[int]) -> Verdict:
    """Judge `history` given the write ids found at the end (read after the run, on the primary)."""
    ops = sorted(history.ops, key=lambda o: o.at)
    outcome: dict[int, Op] = {}
    invoked: dict[int, float] = {}
    for op in ops:
        if op.type == "invoke":
            invoked.setdefault(op.ident, op.at)
        else:
            outcome[op.ident] = op
    oks = [o for o in outcome.values() if o.type == "ok"]
    indeterminate = sorted({i for i in invoked if i not in outcome} | {o.ident for o in outcome.values()
                                                                        if o.type == "info"})
    lost = sorted(o.ident for o in oks if o.ident not in present)
    failed_present = sorted(o.ident for o in outcome.values() if o.type == "fail" and o.ident in present)
    faults = _fault_outcomes(history.faults, oks, _horizon(history))
    return Verdict(
        acknowledged=len(oks), lost=lost, indeterminate=indeterminate,
        indeterminate_present=[i for i in indeterminate if i in present], failed_but_present=failed_present,
        two_primaries=[(s.at, s.writable) for s in history.roles if len(s.writable) > 1],
        stale_acks=_stale_acks(oks, invoked), overlapping_reigns=_overlapping_reigns(oks),
        deleted_in_sync_set=_deleted_in_sync_set(history),
        faults=faults, rows=_rows(faults, history.faults, outcome, invoked, set(lost), set(indeterminate)))


def _horizon(history: History) -> float:
    moments = [o.at for o in history.ops] + [f.at for f in history.faults] + [s.at for s in history.roles]
    return max(moments, default=0.0)


def _stale_acks(oks: list[Op], invoked: dict[int, float]) -> list[tuple[int, Term, Term]]:
    """Writes acknowledged in a lower timeline than one acknowledged before they were sent. The
    highest term acknowledged up to each completion is kept as a running maximum, so a history of a
    hundred thousand writes is judged in O(n log n)."""
    by_completion = sorted((o for o in oks if o.term is not None), key=lambda o: o.at)
    moments = [o.at for o in by_completion]
    highest: list[Term] = []
    for op in by_completion:
        assert op.term is not None
        highest.append(op.term if not highest or op.term.timeline > highest[-1].timeline else highest[-1])
    stale = []
    for op in by_completion:
        done_before = bisect.bisect_left(moments, invoked.get(op.ident, op.at))  # acknowledged strictly before
        newer = highest[done_before - 1] if done_before else None
        assert op.term is not None
        if newer is not None and newer.timeline > op.term.timeline:
            stale.append((op.ident, op.term, newer))
    return stale


def _overlapping_reigns(oks: list[Op]) -> list[tuple[Term, Term]]:
    """Each term's span, first to last acknowledgement; two spans of different servers must not overlap."""
    spans: dict[Term, tuple[float, float]] = {}
    for op in oks:
        if op.term is not None:
            first, last = spans.get(op.term, (op.at, op.at))
            spans[op.term] = (min(first, op.at), max(last, op.at))
    ordered = sorted(spans.items(), key=lambda item: item[1][0])
    return [(a, b) for i, (a, (_, a_end)) in enumerate(ordered) for b, (b_start, _) in ordered[i + 1:]
            if a.server != b.server and b_start < a_end]


def _deleted_in_sync_set(history: History) -> list[tuple[float, str, str]]:
    found = []
    for deletion in history.deletions:
        before = [s for s in history.sync if s.at <= deletion.at]
        if before and deletion.standby in standby_names(before[-1].synchronous_standby_names):
            found.append((deletion.at, deletion.standby, before[-1].synchronous_standby_names))
    return found


def _pairs(faults: list[Fault]) -> list[tuple[Fault, Fault | None]]:
    """Each fault's start with its end (the next end of the same kind and target)."""
    pairs: list[tuple[Fault, Fault | None]] = []
    open_: dict[tuple[str, str], list[Fault]] = defaultdict(list)
    for fault in sorted(faults, key=lambda f: f.at):
        if fault.phase == "start":
            open_[(fault.kind, fault.target)].append(fault)
        elif open_[(fault.kind, fault.target)]:
            pairs.append((open_[(fault.kind, fault.target)].pop(0), fault))
    pairs += [(start, None) for starts in open_.values() for start in starts]
    return sorted(pairs, key=lambda p: p[0].at)


def _fault_outcomes(faults: list[Fault], oks: list[Op], horizon: float) -> list[FaultOutcome]:
    acks = sorted(o.at for o in oks)
    out = []
    for start, end in _pairs(faults):
        ended = end.at if end is not None else horizon
        before = [a for a in acks if a <= start.at]
        after = [a for a in acks if a > start.at]
        # The stretches between consecutive acks that overlap [start, ended]; an unhealed stretch runs to the horizon.
        healed = [a for a in after if a > ended][:1] or [horizon]
        edges = (before[-1:] or [start.at]) + [a for a in after if a <= ended] + healed
        gaps = [b - a for a, b in itertools.pairwise(edges)]
        out.append(FaultOutcome(start.kind, start.target, start.at, ended,
                                survived=end is not None and any(a > ended for a in acks),
                                unavailable_s=round(max(gaps, default=0.0), 1)))
    return out


def _rows(outcomes: list[FaultOutcome], faults: list[Fault], outcome: dict[int, Op], invoked: dict[int, float],
          lost: set[int], indeterminate: set[int]) -> dict[str, KindRow]:
    """Per fault kind; each write is counted under the last fault started before it was sent."""
    rows: dict[str, KindRow] = {}
    for fault in outcomes:
        row = rows.setdefault(fault.kind, KindRow(fault.kind))
        row.injected += 1
        row.survived += fault.survived
        row.unavailable.append(fault.unavailable_s)
    starts = sorted((f.at, f.kind) for f in faults if f.phase == "start")
    for ident, sent in invoked.items():
        kind = next((k for at, k in reversed(starts) if at <= sent), NO_FAULT)
        row = rows.setdefault(kind, KindRow(kind))
        op = outcome.get(ident)
        row.acknowledged += op is not None and op.type == "ok"
        row.lost += ident in lost
        row.indeterminate += ident in indeterminate
    return rows
