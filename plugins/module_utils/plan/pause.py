"""Pause: the `pools.multigres.com/paused` annotation on the MultigresShard withholds every write.

The plan is still computed in full, so status can say exactly what a paused shard would do; the
actions are moved aside (`Plan.withheld`) and none is sent. This includes the deletion of a paused
shard: its finalizer waits, with the pods and PVCs untouched, until the pause is lifted.

A value other than "true" or "false" reads as paused: someone meant to set it, and acting on a shard
an operator tried to freeze is the worse mistake.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import keys
from ..core.manifest import Manifest
from ..state import facts
from .actions import Action

# How many withheld plan lines the status message lists before "and N more".
LISTED = 10


@dataclass(frozen=True)
class Pause:
    value: str

    @property
    def valid(self) -> bool:
        return self.value == keys.PAUSED_TRUE

    @property
    def reason(self) -> str:
        return "Paused" if self.valid else "InvalidAnnotation"

    def headline(self) -> str:
        if self.valid:
            return f"paused by annotation {keys.ANN_PAUSED}={keys.PAUSED_TRUE}"
        return (f"paused: annotation {keys.ANN_PAUSED} has value {self.value!r}, allowed values are "
                f"{keys.PAUSED_TRUE!r} and {keys.PAUSED_FALSE!r}; an unknown value is treated as paused")

    def message(self, withheld: list[Action], *, deleting: bool = False) -> str:
        """What status says: the pause, and the writes it holds back."""
        lines = [a.describe() for a in withheld]
        if not lines:
            return f"{self.headline()}; nothing to do"
        shown = "; ".join(lines[:LISTED]) + (f"; and {len(lines) - LISTED} more" if len(lines) > LISTED else "")
        what = "shard deletion waits (finalizer kept)" if deleting else f"{len(lines)} writes withheld"
        return f"{self.headline()}; {what}: {shown}"


def pause_of(cr: Manifest | None) -> Pause | None:
    """The shard's pause, or None when it may act (no CR, annotation absent or "false")."""
    if cr is None:
        return None
    value = facts.annotations(cr).get(keys.ANN_PAUSED)
    if value is None or value == keys.PAUSED_FALSE:
        return None
    return Pause(value)
