"""A per-shard work queue that coalesces bursts of events into one reconcile.

Semantics (the same as controller-runtime's workqueue, plus deadlines and gates):
- a shard is queued at most once; adding it again keeps the earlier deadline, so a burst of
  events within the coalescing window becomes one run and a late event never postpones an
  early one;
- a shard is never processed by two workers at once; events that arrive while it runs mark it
  dirty and it runs once more after the current run;
- a gate ("not before") holds a shard back after a failure (backoff) or an invalid spec; events
  caused by the run itself respect the gate, and only a forced add (the spec changed) lifts it,
  also when it came while the run that sets the gate was still going (that run read the old spec:
  a user who fixes a refused spec at once must not wait for another change);
- a forced add is also urgent: among due shards it goes first, so what a user just changed is not
  stuck behind a backlog of requeues and resyncs (spec change to first write stays short);
- a background add (the periodic resync) goes last: among due shards, those queued only by a
  resync come after every shard queued by an event, and a consumer may refuse them altogether
  (the controller keeps one worker for event-driven work, so a full resync never occupies all).

`WorkQueue` is pure: every method takes `now`. `AsyncWorkQueue` drives it on an asyncio loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

Key = Hashable


@dataclass
class WorkQueue:
    _due: dict[Key, float] = field(default_factory=dict)
    _dirty: dict[Key, float] = field(default_factory=dict)
    _processing: set[Key] = field(default_factory=set)
    _gate: dict[Key, float] = field(default_factory=dict)
    _urgent: set[Key] = field(default_factory=set)
    _background: set[Key] = field(default_factory=set)
    _forced_while_running: set[Key] = field(default_factory=set)

    def add(self, key: Key, at: float, *, force: bool = False, background: bool = False) -> None:
        """Ask for `key` to run at `at` or earlier; `force` lifts a gate (the spec changed);
        `background` marks a resync, which yields to every other add."""
        if force:
            self._gate.pop(key, None)
            self._urgent.add(key)
            if key in self._processing:
                self._forced_while_running.add(key)
        at = max(at, self._gate.get(key, -math.inf))
        pending = self._dirty if key in self._processing else self._due
        if background:
            if key not in pending:
                self._background.add(key)
        else:
            self._background.discard(key)
        if at < pending.get(key, math.inf):
            pending[key] = at

    def gate(self, key: Key, until: float) -> None:
        """Hold `key` back until `until` (math.inf: until a forced add)."""
        if key in self._forced_while_running:
            return  # set by a run that read the spec before it changed: the change goes first
        self._gate[key] = until
        for pending in (self._due, self._dirty):
            if key in pending:
                pending[key] = max(pending[key], until)

    def gated_until(self, key: Key) -> float | None:
        return self._gate.get(key)

    def pop(self, now: float) -> Key | None:
        """The ready key with the earliest deadline (now marked as processing), or None."""
        batch = self.pop_batch(now, 1)
        return batch[0] if batch else None

    def _rank(self, key: Key) -> int:
        return 0 if key in self._urgent else 2 if key in self._background else 1

    def _eligible(self, key: Key, background: bool) -> bool:
        return background or key not in self._background

    def pop_batch(self, now: float, limit: int, *, background: bool = True) -> list[Key]:
        """Up to `limit` ready keys, urgent ones first, resync-only ones last, then earliest deadline
        (now marked as processing); never one not due; no resync-only key unless `background`."""
        keys = list(self._due)
        ready = sorted((self._rank(keys[i]), at, i) for i, at in enumerate(self._due.values())
                       if at <= now and self._eligible(keys[i], background))
        batch = [keys[i] for _rank, _at, i in ready[: max(0, limit)]]
        for key in batch:
            del self._due[key]
            self._urgent.discard(key)
            self._background.discard(key)
            self._processing.add(key)
        return batch

    def done(self, key: Key) -> None:
        """The run of `key` finished; if it was marked dirty meanwhile, queue it again."""
        self._processing.discard(key)
        self._forced_while_running.discard(key)
        if key in self._dirty:
            self.add(key, self._dirty.pop(key), background=key in self._background)

    def forget(self, key: Key) -> None:
        """Drop every trace of `key` (its shard is gone); a running instance finishes normally."""
        self._due.pop(key, None)
        self._dirty.pop(key, None)
        self._gate.pop(key, None)
        self._urgent.discard(key)
        self._background.discard(key)
        self._forced_while_running.discard(key)

    def next_deadline(self, *, background: bool = True) -> float | None:
        finite = [at for key, at in self._due.items() if at != math.inf and self._eligible(key, background)]
        return min(finite, default=None)

    def depth(self) -> int:
        """Shards waiting to run (queued or dirty), not counting those running."""
        return len(self._due) + len(self._dirty)

    def processing(self) -> frozenset[Key]:
        return frozenset(self._processing)

    def __contains__(self, key: Key) -> bool:
        return key in self._due or key in self._dirty or key in self._processing

    def __iter__(self) -> Iterator[Key]:
        return iter({*self._due, *self._dirty, *self._processing})


class AsyncWorkQueue:
    """`WorkQueue` on the running loop's monotonic clock, with an awaitable `get`."""

    def __init__(self, coalesce: float = 0.1) -> None:
        self.coalesce = coalesce
        self.queue = WorkQueue()
        self._changed = asyncio.Event()
        self._closed = False

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def _wake(self) -> None:
        self._changed.set()

    def add(self, key: Key, delay: float | None = None, *, force: bool = False, background: bool = False) -> None:
        """Queue `key` after `delay` seconds (default: the coalescing window)."""
        self.queue.add(key, self.now() + (self.coalesce if delay is None else delay), force=force,
                       background=background)
        self._wake()

    def gate(self, key: Key, seconds: float) -> None:
        self.queue.gate(key, self.now() + seconds)
        self._wake()

    def done(self, key: Key) -> None:
        self.queue.done(key)
        self._wake()

    def forget(self, key: Key) -> None:
        self.queue.forget(key)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    async def get(self) -> Key | None:
        """The next ready key; None once the queue is closed."""
        batch = await self.get_batch(1)
        return batch[0] if batch else None

    async def get_batch(self, limit: int, *, background: bool = True) -> list[Key]:
        """Wait for a ready key, then take up to `limit` keys that are due now (never waiting for
        more); an empty list once the queue is closed. `background=False` leaves resync-only keys
        to other consumers."""
        while not self._closed:
            batch = self.queue.pop_batch(self.now(), limit, background=background)
            if batch:
                return batch
            self._changed.clear()
            deadline = self.queue.next_deadline(background=background)
            timeout = None if deadline is None else max(0.0, deadline - self.now())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
        return []
