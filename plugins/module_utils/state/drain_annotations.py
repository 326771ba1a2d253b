"""The one reader of a pod's drain annotations, used by the engine and the agent alike.

Rules (docs/operations.md, "Drain annotations"):
- `drain.multigres.com/state`: absent or empty means no drain; one of DrainState is that state;
  any other value is *unknown*: reported (a Warning Event and the shard's DrainAnnotationsValid
  condition) and left alone — neither side writes it, drains it, deletes it or cancels it, and the
  other pods of the pool go on.
- `drain.multigres.com/force`: one-shot. It names the state to force past (requested, draining or
  acknowledged) and is consumed when the pod leaves that state, forced or not. A value that is not
  such a state, that names a state the drain already left, or that sits on a pod without a drain is
  stale: the agent removes it and says why.
- A forced step is recorded in `drain.multigres.com/forced` (`<state>@<time>`, comma-separated) besides
  the DrainForced Event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core import keys

# States a human may force past: the last one has nothing after it.
FORCIBLE: tuple[keys.DrainState, ...] = keys.DRAIN_ORDER[:-1]
ALLOWED_STATES = ", ".join(s.value for s in keys.DRAIN_ORDER)
ALLOWED_FORCE = ", ".join(s.value for s in FORCIBLE)

# What a cancelled drain leaves behind and the engine removes with it. Not ANN_DRAIN_INELIGIBLE:
# the agent drops that one itself once it has made the standby eligible again.
CANCEL_CLEARS = (keys.ANN_DRAIN_STATE, keys.ANN_DRAIN_REQUESTED_AT, keys.ANN_DRAIN_REASON, keys.ANN_SWITCHOVER,
                 keys.ANN_DRAIN_BLOCKED, keys.ANN_DRAIN_STATE_SINCE, keys.ANN_DRAIN_FORCE, keys.ANN_DRAIN_FORCED)


@dataclass(frozen=True)
class DrainReading:
    """A pod's drain state: `state` when known; `unknown` holds a value that is not a DrainState."""

    state: keys.DrainState | None = None
    unknown: str | None = None

    @property
    def active(self) -> bool:
        """A drain the engine and the agent act on (a known state)."""
        return self.state is not None


def read_state(annotations: Mapping[str, str]) -> DrainReading:
    value = annotations.get(keys.ANN_DRAIN_STATE)
    if not value:
        return DrainReading()
    try:
        return DrainReading(state=keys.DrainState(value))
    except ValueError:
        return DrainReading(unknown=value)


def unknown_state_message(pod: str, value: str) -> str:
    return (f"pod {pod}: annotation {keys.ANN_DRAIN_STATE}={value!r} is not a drain state (allowed: "
            f"{ALLOWED_STATES}); left alone: fix or remove the annotation")


@dataclass(frozen=True)
class ForceReading:
    """`target` is the state the force annotation lets the agent step past now; `stale` says why an
    annotation present is not used and should be removed; both None: no annotation, or one for a later
    state (kept until the drain gets there)."""

    target: keys.DrainState | None = None
    stale: str | None = None


def read_force(annotations: Mapping[str, str], state: keys.DrainState | None) -> ForceReading:
    value = annotations.get(keys.ANN_DRAIN_FORCE)
    if value is None:
        return ForceReading()
    try:
        wanted = keys.DrainState(value)
    except ValueError:
        wanted = None
    if wanted is None or wanted not in FORCIBLE:
        return ForceReading(stale=f"{keys.ANN_DRAIN_FORCE}={value!r} is not a state to force past "
                                  f"(allowed: {ALLOWED_FORCE})")
    if state is None:
        return ForceReading(stale=f"{keys.ANN_DRAIN_FORCE}={value} is set but the pod has no drain")
    if wanted is state:
        return ForceReading(target=wanted)
    if keys.DRAIN_ORDER.index(wanted) < keys.DRAIN_ORDER.index(state):
        return ForceReading(stale=f"{keys.ANN_DRAIN_FORCE}={value}: the drain already left {value} (now {state})")
    return ForceReading()


def forced_record(previous: str | None, state: keys.DrainState, stamp: str) -> str:
    """The value of ANN_DRAIN_FORCED after forcing past `state` at `stamp`."""
    entry = f"{state.value}@{stamp}"
    return f"{previous},{entry}" if previous else entry
