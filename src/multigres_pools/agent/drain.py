"""The drain state machine's transition logic: pure, no I/O (the executor is `drain_runner.py`).

`decide(state, facts)` says what must happen next: gather a fact, perform one side effect, write the
next state, wait with a reason, or nothing. The executor calls it in a loop, so every state is on
the pod before the side effect that the next state stands for, and a restart at any point simply
re-derives the next step from the annotation and fresh facts.

Proofs (fail closed): `draining` needs a ready primary pod and the REMOVE accepted; `acknowledged`
needs the primary's own PrimaryStatus to no longer list the standby; `ready-for-deletion` needs the
pooler record gone. The only way past a missing proof is the force annotation, one step at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ansible_collections.multigres.pools.plugins.module_utils.keys import DrainState


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


class Need(StrEnum):
    PRIMARY_GUARD = "primary-guard"
    SYNC = "sync-replication"


class Effect(StrEnum):
    REMOVE_STANDBY = "remove-standby"
    UNREGISTER = "unregister"


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
    unregister_error: str | None = None
    unregistered: bool = False
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    kind: str  # "need" | "effect" | "write" | "block" | "done"
    need: Need | None = None
    effect: Effect | None = None
    state: DrainState | None = None
    reason: str = ""
    forced: bool = False

    @staticmethod
    def write(state: DrainState, forced: bool = False) -> Decision:
        return Decision("write", state=state, forced=forced)

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
    """Era A has no switchover: the primary leaves by failover once its pod is gone (docs/agent.md).

    We only let it go when it has a connected synchronous standby, so a committed write survives.
    """
    if f.failover_target is None and f.sync_error is None:
        return Decision("need", need=Need.SYNC)
    if f.sync_error is not None:
        return Decision.block(f.sync_error)
    if not f.failover_target:
        return Decision.block(Blocked.NO_FAILOVER_TARGET)
    return Decision.write(NEXT[state])


def decide(state: DrainState | None, f: Facts) -> Decision:
    if state is None or state is DrainState.READY_FOR_DELETION:
        return Decision("done")
    if f.force is state:
        return Decision.write(NEXT[state], forced=True)

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
