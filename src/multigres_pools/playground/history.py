"""A Jepsen-style history of a fault run: what clients asked and heard, which faults were injected
when, and what every pod's PostgreSQL said its role was. Recording only; the verdict is
`history_check`, which reads nothing but this record (and the rows present at the end).

Client operations are write ids with a type each: `invoke` before the INSERT is sent, then one of
`ok` (COMMIT returned: acknowledged), `fail` (an error before COMMIT was sent: certainly not
written) or `info` (the COMMIT's outcome is unknown: a broken connection or a timeout). An `ok`
carries the term it was acknowledged in when the client could read it (the primary's timeline and
the start time of the postmaster that answered).

Times are time.monotonic() seconds; every list is appended under one lock, so a recorder can be
shared by the write load, the role sampler and the fault runner threads.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal

OpType = Literal["invoke", "ok", "fail", "info"]


@dataclass(frozen=True)
class Term:
    """Who acknowledged a write: the primary's timeline, and which postmaster run (its start time)."""

    timeline: int
    server: str


@dataclass(frozen=True)
class Op:
    at: float
    type: OpType
    ident: int
    term: Term | None = None
    error: str = ""


@dataclass(frozen=True)
class Fault:
    at: float
    kind: str
    phase: Literal["start", "end"]
    target: str = ""


@dataclass(frozen=True)
class RoleSample:
    """One round of pg_is_in_recovery() over every pod: the pods that answered `false`."""

    at: float
    writable: tuple[str, ...]
    answered: int


@dataclass(frozen=True)
class Deletion:
    """A pool pod started terminating; `standby` is its name in synchronous_standby_names."""

    at: float
    standby: str


@dataclass(frozen=True)
class SyncSample:
    at: float
    synchronous_standby_names: str


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    roles: list[RoleSample] = field(default_factory=list)
    deletions: list[Deletion] = field(default_factory=list)
    sync: list[SyncSample] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def op(self, type_: OpType, ident: int, term: Term | None = None, error: str = "",
           at: float | None = None) -> None:
        with self._lock:
            self.ops.append(Op(time.monotonic() if at is None else at, type_, ident, term, error))

    def fault(self, kind: str, phase: Literal["start", "end"], target: str = "", at: float | None = None) -> None:
        with self._lock:
            self.faults.append(Fault(time.monotonic() if at is None else at, kind, phase, target))
