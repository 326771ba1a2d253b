"""Maintenance windows: when disruptive actions may start. Pure: the caller passes `now` (UTC).

A window opens at `start` (HH:MM, UTC) on each of its weekdays and stays open for `length` (at
most 24 h, so a window that opened yesterday may still be open). No windows at all means always
open. Only the start of a disruptive action is gated: a drain already under way finishes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # index = datetime.weekday()
MAX_LENGTH = dt.timedelta(hours=24)


@dataclass(frozen=True)
class Window:
    days: frozenset[int]  # datetime.weekday() numbers
    start: dt.time
    length: dt.timedelta

    def starts_around(self, now: dt.datetime, offsets: range) -> list[dt.datetime]:
        """This window's openings on the days `now + offset`."""
        day = now.astimezone(dt.UTC).date()
        out = []
        for offset in offsets:
            date = day + dt.timedelta(days=offset)
            if date.weekday() in self.days:
                out.append(dt.datetime.combine(date, self.start, tzinfo=dt.UTC))
        return out


def window(days: list[str], start: str, length: dt.timedelta) -> Window:
    """A window from its spec values (already validated: weekday names, "HH:MM")."""
    hours, minutes = (int(part) for part in start.split(":"))
    return Window(frozenset(WEEKDAYS.index(d) for d in days), dt.time(hours, minutes), length)


def is_open(windows: tuple[Window, ...], now: dt.datetime) -> bool:
    if not windows:
        return True
    return any(begin <= now < begin + w.length for w in windows for begin in w.starts_around(now, range(-1, 1)))


def next_opening(windows: tuple[Window, ...], now: dt.datetime) -> dt.datetime | None:
    """When disruptive actions may next start: None when they may start now."""
    if is_open(windows, now):
        return None
    return min(begin for w in windows for begin in w.starts_around(now, range(0, 8)) if begin > now)
