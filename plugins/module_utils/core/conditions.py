"""A MultigresShard status condition, as the engine's pure condition builders write it."""

from __future__ import annotations

from typing import Any

# The CRD's maxLength of a condition message (model.Condition): longer text is cut, not refused.
MESSAGE_MAX = 32768


def shard_condition(ctype: str, true: bool, reason: str, message: str) -> dict[str, Any]:
    return {"type": ctype, "status": "True" if true else "False", "reason": reason, "message": message[:MESSAGE_MAX]}
