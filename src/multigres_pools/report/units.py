"""How the status screen spells positions, sizes, times and ages."""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.state import facts


def size(n: int) -> str:
    """1536 -> `1.5 KiB`; whole bytes below 1 KiB."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def duration(seconds: float) -> str:
    """Ages as kubectl spells them, a unit once there are two of it: `90s`, `12m`, `47h`, `3d`."""
    s = int(max(0, seconds))
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= 2 * length:
            return f"{s // length}{unit}"
    return f"{s}s"


def age(stamp: dt.datetime | None, now: dt.datetime) -> str:
    return duration((now - stamp).total_seconds()) if stamp else "-"


def when(stamp: dt.datetime, now: dt.datetime) -> str:
    """An RFC 3339 time with how long ago or from now: `2026-11-24T01:00:11Z (3h ago)`."""
    delta = (stamp - now).total_seconds()
    return f"{facts.format_time(stamp)} ({'in ' + duration(delta) if delta > 0 else duration(-delta) + ' ago'})"


def stamp(value: dt.datetime | None) -> str | None:
    """A time for JSON: RFC 3339 in UTC, or null."""
    return facts.format_time(value) if value else None
