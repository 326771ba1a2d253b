"""Exponential backoff with jitter for failed reconciles.

"Equal jitter": half the exponential delay is fixed, half is random, so retries of many shards
that failed together (an API outage) spread out instead of arriving in lockstep, and no retry
comes sooner than half the nominal delay.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    base: float = 1.0
    cap: float = 300.0
    factor: float = 2.0
    rand: Callable[[], float] = field(default=random.random, repr=False)
    _failures: dict[object, int] = field(default_factory=dict, repr=False)

    def nominal(self, failures: int) -> float:
        """The delay before jitter after `failures` consecutive failures (1 = first failure)."""
        if failures < 1:
            return 0.0
        # min() before the power would overflow for very long failure streaks.
        exponent = min(failures - 1, 64)
        return min(self.cap, self.base * self.factor**exponent)

    def jittered(self, failures: int) -> float:
        half = self.nominal(failures) / 2
        return half + half * self.rand()

    def failure(self, key: object) -> float:
        """Record a failure of `key`; return how long to wait before retrying it."""
        count = self._failures.get(key, 0) + 1
        self._failures[key] = count
        return self.jittered(count)

    def success(self, key: object) -> None:
        self._failures.pop(key, None)

    def failures(self, key: object) -> int:
        return self._failures.get(key, 0)
