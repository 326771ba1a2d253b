"""A write fence between a leader and the processes it starts (the operator's ansible runs).

The leader publishes, in a file, the CLOCK_MONOTONIC instant until which its leadership is certain
(its last successful Lease renewal plus the renew deadline). CLOCK_MONOTONIC is one clock for the
whole machine on Linux, so a child compares it with its own reading: no wall clock, no API call.
A KubeClient whose environment names the file (keys.ENV_WRITE_FENCE) checks it before every write,
so a run that outlives its leader's certainty (the process group was frozen, the leader's lease
thread is late) writes nothing more: the check fails closed on a missing or unreadable file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..core import keys


def publish(path: Path, valid_until: float) -> None:
    """Atomically record `valid_until` (a time.monotonic() value); 0 revokes."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(repr(float(valid_until)))
    os.replace(tmp, path)


def refusal(now: float | None = None) -> str | None:
    """Why a write must not be sent now, or None when it may (no fence configured, or still valid)."""
    path = os.environ.get(keys.ENV_WRITE_FENCE)
    if not path:
        return None
    try:
        valid_until = float(Path(path).read_text())
    except (OSError, ValueError) as exc:
        return f"write refused: the leader's fence {path} is unreadable ({exc}); leadership is in doubt"
    now = time.monotonic() if now is None else now
    if now >= valid_until:
        return f"write refused: the leadership of the operator that started this run is in doubt (fence {path})"
    return None
