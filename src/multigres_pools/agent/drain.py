"""The drain state machine's transition logic: pure, no I/O (the executor is `drain_runner.py`).

`decide(state, facts)` says what must happen next: gather a fact, perform one side effect, write the
next state, wait with a reason, or nothing. The executor calls it in a loop, so every state is on
the pod before the side effect that the next state stands for, and a restart at any point simply
re-derives the next step from the annotation and fresh facts.

Proofs (fail closed): `draining` needs a ready primary pod and the REMOVE accepted; `acknowledged`
needs the primary's own PrimaryStatus to no longer list the standby; `ready-for-deletion` needs the
pooler record gone. The only way past a missing proof is the force annotation, one step at a time.

Multigres v0.1.0 (`Facts.by_eligibility`): multiorch re-adds any ELIGIBLE standby it finds missing
from the cohort, so the standby is first made INELIGIBLE and only then removed with our own CAS
REMOVE; the proofs also ask the standby itself (still INELIGIBLE, or dead), and are taken again in
`acknowledged` before and after the record is deleted. A standby found back (restarted, re-added)
sends the drain back to `draining`, never on to `ready-for-deletion`; so does one found back while
the pod waits in `ready-for-deletion` for the engine to delete it (docs/agent.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState


class Guard(StrEnum):
    """The primary pod's state, checked before any RPC is sent to it (contract §3.4 guards)."""

    OK = "ok"
    NO_PRIMARY = "no-primary"
    POD_MISSING = "primary-pod-missing"
    POD_TERMINATING = "primary-pod-terminating"
    POD_DRAINING = "primary-pod-draining"
    POD_NOT_READY = "primary-pod-not-ready"


class Blocked(StrEnum):
    """Agent-level reasons; data-plane refusals use dataplane.base.RefusalReason values."""

    STILL_LISTED = "standby-still-in-sync-list"
    NO_FAILOVER_TARGET = "no-connected-sync-standby-for-failover"
    # v0.1.0: leaving would take the cohort below its durability policy (commits would stall).
    NOT_DURABLE_WITHOUT = "cohort-below-durability-policy"
    # v0.1.0: the standby reports ELIGIBLE again (its multipooler restarted).
    ELIGIBLE_AGAIN = "standby-eligible-again"
    # v0.1.0, a primary's drain in `requested`: another standby does not stream from it yet, and the
    # multiorch that would elect its successor is still repairing that standby's replication.
    STANDBYS_NOT_STREAMING = "standbys-not-streaming"


class Need(StrEnum):
    PRIMARY_GUARD = "primary-guard"
    SYNC = "sync-replication"
    STANDBY = "standby-state"


class Effect(StrEnum):
    REMOVE_STANDBY = "remove-standby"
    UNREGISTER = "unregister"
    MAKE_INELIGIBLE = "make-ineligible"


@dataclass
class Facts:
    """What the executor has learned in this pass. None means "not looked at yet"."""

    is_primary: bool = False
    force: DrainState | None = None
    guard: Guard | None = None
    removal_error: str | None = None
    removal_done: bool = False
    # Result of reading PrimaryStatus: is the draining pooler still listed, or why it could not be read.
    listed: bool | None = None
    sync_error: str | None = None
    # For a primary being drained: does it have a connected synchronous standby to fail over to?
    failover_target: bool | None = None
    # ... and the standby pods that should stream from it and do not (yet); () once the settle is over.
    not_streaming: tuple[str, ...] = ()
    unregister_error: str | None = None
    unregistered: bool = False
    # v0.1.0 (the data plane drains by cohort eligibility).
    by_eligibility: bool = False
    durable: bool | None = None  # would the cohort meet its durability policy without this standby?
    ineligible_done: bool = False
    ineligible_error: str | None = None
    standby_out: bool | None = None  # the standby itself says INELIGIBLE, or cannot be reached
    extra: dict[str, str] = field(default_factory=dict)

    def forget_proofs(self) -> None:
        """Facts read before a side effect do not prove anything after it: read them again."""
        self.listed = self.standby_out = self.durable = None
        self.sync_error = None


@dataclass(frozen=True)
class Decision:
    kind: str  # "need" | "effect" | "write" | "block" | "done"
    need: Need | None = None
    effect: Effect | None = None
    state: DrainState | None = None
    reason: str = ""
    forced: bool = False

    @staticmethod
    def write(state: DrainState, forced: bool = False, reason: str = "") -> Decision:
        return Decision("write", state=state, forced=forced, reason=reason)

    @staticmethod
    def block(reason: str) -> Decision:
        return Decision("block", reason=reason)


NEXT = {
    DrainState.REQUESTED: DrainState.DRAINING,
    DrainState.DRAINING: DrainState.ACKNOWLEDGED,
    DrainState.ACKNOWLEDGED: DrainState.READY_FOR_DELETION,
}


def _guarded(f: Facts) -> Decision | None:
    if f.guard is None:
        return Decision("need", need=Need.PRIMARY_GUARD)
    if f.guard is not Guard.OK:
        return Decision.block(f.guard.value)
    return None


def _primary_drain(state: DrainState, f: Facts) -> Decision:
    """No switchover API (era A, v0.1.0): the primary leaves by failover once its pod is gone (docs/agent.md).

    We only let it go when it has a connected synchronous standby, so a committed write survives; and
    it starts only once every other standby streams (or the settle is over): on v0.1.0 a multiorch
    still repairing a standby's replication holds the election until that action ends (seconds).
    """
    if f.failover_target is None and f.sync_error is None:
        return Decision("need", need=Need.SYNC)
    if f.sync_error is not None:
        return Decision.block(f.sync_error)
    if not f.failover_target:
        return Decision.block(Blocked.NO_FAILOVER_TARGET)
    if state is DrainState.REQUESTED and f.not_streaming:
        return Decision.block(Blocked.STANDBYS_NOT_STREAMING)
    return Decision.write(NEXT[state])


def _out_of_cohort(f: Facts) -> Decision | None:
    """v0.1.0 proof that the standby is out and stays out: the primary does not list it (cohort and
    GUC) and the standby itself refuses membership or is gone. None when the proof holds."""
    if f.sync_error is not None:
        return Decision.block(f.sync_error)
    if f.listed is None:
        return Decision("need", need=Need.SYNC)
    if f.standby_out is None:
        return Decision("need", need=Need.STANDBY)
    if f.listed:
        return Decision.block(Blocked.STILL_LISTED)
    if not f.standby_out:
        return Decision.block(Blocked.ELIGIBLE_AGAIN)
    return None


def _eligibility_drain(state: DrainState, f: Facts) -> Decision:
    if state is DrainState.ACKNOWLEDGED:
        # Taken before and again after the record goes; a failed proof sends the drain back a step.
        missing = _out_of_cohort(f)
        if missing is not None:
            if missing.kind == "block" and missing.reason in (Blocked.STILL_LISTED, Blocked.ELIGIBLE_AGAIN):
                return Decision.write(DrainState.DRAINING, reason=missing.reason)
            return missing
        if f.unregister_error is not None:
            return Decision.block(f.unregister_error)
        if not f.unregistered:
            return Decision("effect", effect=Effect.UNREGISTER)
        return Decision.write(DrainState.READY_FOR_DELETION)

    blocked = _guarded(f)
    if blocked is not None:
        return blocked
    # Never stop a standby the cohort cannot do without: every commit would wait for it.
    if f.sync_error is not None and f.durable is None:
        return Decision.block(f.sync_error)
    if f.durable is None:
        return Decision("need", need=Need.SYNC)
    if not f.durable:
        return Decision.block(Blocked.NOT_DURABLE_WITHOUT)
    if state is DrainState.REQUESTED:
        return Decision.write(DrainState.DRAINING)

    # DRAINING: INELIGIBLE first (multiorch then never re-adds it), then our own CAS REMOVE.
    if f.ineligible_error is not None:
        return Decision.block(f.ineligible_error)
    if not f.ineligible_done:
        return Decision("effect", effect=Effect.MAKE_INELIGIBLE)
    if f.removal_error is not None:
        return Decision.block(f.removal_error)
    if not f.removal_done:
        return Decision("effect", effect=Effect.REMOVE_STANDBY)
    missing = _out_of_cohort(f)
    return missing if missing is not None else Decision.write(DrainState.ACKNOWLEDGED)


def _recheck_ready(f: Facts) -> Decision:
    """v0.1.0, `ready-for-deletion` until the engine deletes the pod: the INELIGIBLE flag lives in the
    pooler's memory, so a container restart in this window (crash, SIGKILL) brings the standby back
    ELIGIBLE, and multiorch re-adds it. Found back, the drain goes back to `draining`; that write also
    moves the pod's resourceVersion, so an engine delete planned on the old version is refused."""
    missing = _out_of_cohort(f)
    if missing is None:
        return Decision("done")
    if missing.kind == "block":
        if missing.reason in (Blocked.STILL_LISTED, Blocked.ELIGIBLE_AGAIN):
            return Decision.write(DrainState.DRAINING, reason=missing.reason)
        return Decision("done")  # cannot tell (the primary does not answer): a finished drain is not blocked
    return missing


def decide(state: DrainState | None, f: Facts) -> Decision:
    if state is None:
        return Decision("done")
    if state is DrainState.READY_FOR_DELETION:
        return _recheck_ready(f) if f.by_eligibility and not f.is_primary else Decision("done")
    if f.force is state:
        return Decision.write(NEXT[state], forced=True)
    if f.by_eligibility and not f.is_primary:
        return _eligibility_drain(state, f)

    if state is DrainState.ACKNOWLEDGED:
        if f.unregister_error is not None:
            return Decision.block(f.unregister_error)
        if not f.unregistered:
            return Decision("effect", effect=Effect.UNREGISTER)
        return Decision.write(DrainState.READY_FOR_DELETION)

    if f.is_primary:
        return _primary_drain(state, f)

    blocked = _guarded(f)
    if blocked is not None:
        return blocked
    if state is DrainState.REQUESTED:
        return Decision.write(DrainState.DRAINING)

    # DRAINING: the REMOVE is idempotent on the server, so it is always re-sent after a restart.
    if f.removal_error is not None:
        return Decision.block(f.removal_error)
    if not f.removal_done:
        return Decision("effect", effect=Effect.REMOVE_STANDBY)
    if f.sync_error is not None:
        return Decision.block(f.sync_error)
    if f.listed is None:
        return Decision("need", need=Need.SYNC)
    if f.listed:
        return Decision.block(Blocked.STILL_LISTED)
    return Decision.write(DrainState.ACKNOWLEDGED)
