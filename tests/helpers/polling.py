"""Poll for a condition with a generous deadline instead of asserting on wall-clock time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 60, what: str = "condition", interval: float = 0.2) -> T:
    """Return the first truthy result of check(); raise AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(interval)
