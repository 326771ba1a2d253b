"""A steady SQL write load that remembers every write PostgreSQL acknowledged.

Used by the demo and by the data-safety tests: while pods are drained, rolled or killed, one thread
inserts numbered rows through whichever pod is the primary at that moment. An id is recorded only
after its COMMIT returned, so `missing()` lists acknowledged writes that a later read cannot find:
the one number a "never loses a write" claim is judged by. Ids are never reused, so a COMMIT whose
outcome is unknown (the connection broke) is simply not counted either way.

    load = WriteLoad(find_primary=lambda: "10.77.0.5", dsn=lambda host: f"host={host} ...")
    load.start(); ...; load.stop()
    assert load.missing() == []
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from .history import History, Term

TABLE = "mgp_writeload"
# The term a write was acknowledged in: the timeline of the primary's current WAL (each promotion
# starts a new one) and its postmaster's start time (which server run answered).
TERM_SQL = "substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8), pg_postmaster_start_time()::text"


@dataclass(frozen=True)
class Outage:
    """The longest stretch without an acknowledged write, and when it started (monotonic)."""

    seconds: float
    started: float


class WriteLoad(threading.Thread):
    def __init__(self, find_primary: Callable[[], str | None], dsn: Callable[[str], str],
                 interval: float = 0.02, table: str = TABLE, history: History | None = None) -> None:
        super().__init__(name="writeload", daemon=True)
        self.find_primary, self.dsn, self.interval, self.table = find_primary, dsn, interval, table
        # With a history, every write is recorded as invoke, then ok (with the term that acknowledged
        # it), fail (an error before COMMIT) or info (an error in COMMIT: its outcome is unknown).
        self.history = history
        self.acked: list[int] = []
        self.ack_times: list[float] = []
        self.errors: Counter[str] = Counter()
        # Each distinct error (type and first line; at most 50), so a report can say what clients saw.
        self.error_texts: set[str] = set()
        self._next_id = 1
        self._stopping = threading.Event()
        self._conn: psycopg.Connection | None = None
        self._host: str | None = None

    # --- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        while not self._stopping.is_set():
            pending, committing = None, False  # the write sent in this turn, and whether its COMMIT was
            try:
                conn = self._connection()
                if conn is None:
                    self._stopping.wait(0.2)
                    continue
                ident, self._next_id = self._next_id, self._next_id + 1
                if self.history is not None:
                    self.history.op("invoke", ident)
                    pending = ident
                with conn.cursor() as cur:
                    cur.execute(f"INSERT INTO {self.table} (id) VALUES (%s)"
                                + (f" RETURNING {TERM_SQL}" if self.history is not None else ""), (ident,))
                    row = cur.fetchone() if self.history is not None else None
                committing = True
                conn.commit()  # returns once the synchronous standbys confirmed (synchronous_commit=on)
                self.acked.append(ident)
                self.ack_times.append(time.monotonic())
                if self.history is not None:
                    self.history.op("ok", ident, term=Term(int(row[0], 16), str(row[1])) if row else None)
            except psycopg.Error as exc:
                if self.history is not None and pending is not None:
                    self.history.op("info" if committing else "fail", pending, error=type(exc).__name__)
                self.errors[type(exc).__name__] += 1
                if len(self.error_texts) < 50:
                    self.error_texts.add(f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}")
                self._drop()
                self._stopping.wait(0.2)
                continue
            self._stopping.wait(self.interval)
        self._drop()

    def _connection(self) -> psycopg.Connection | None:
        host = self.find_primary()
        if host is None:
            return None
        if self._conn is not None and host == self._host and not self._conn.closed:
            return self._conn
        self._drop()
        conn = psycopg.connect(self.dsn(host), connect_timeout=3)
        with conn.cursor() as cur:
            cur.execute("SELECT pg_is_in_recovery()")
            row = cur.fetchone()
            if row is None or row[0]:
                conn.close()
                return None  # a standby (the role label lags a failover): ask again
            cur.execute(f"CREATE TABLE IF NOT EXISTS {self.table} "
                        "(id bigint PRIMARY KEY, at timestamptz DEFAULT now())")
        conn.commit()
        self._conn, self._host = conn, host
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
        self._conn, self._host = None, None

    def stop(self, timeout: float = 30) -> None:
        self._stopping.set()
        self.join(timeout)

    # --- what it proves ----------------------------------------------------------------------------
    def wait_for_acks(self, count: int, timeout: float) -> None:
        """Block until `count` more writes were acknowledged (the load is flowing)."""
        target, deadline = len(self.acked) + count, time.monotonic() + timeout
        while len(self.acked) < target:
            if time.monotonic() > deadline or not self.is_alive():
                raise TimeoutError(f"write load: {len(self.acked)} acknowledged, wanted {target}; "
                                   f"errors {dict(self.errors)}")
            time.sleep(0.05)

    def missing(self, host: str | None = None) -> list[int]:
        """Acknowledged ids that the primary (or `host`) does not have. Only ids acknowledged before
        the read starts count: one acknowledged while the SELECT runs may be newer than its snapshot
        (this race once reported the newest write as lost while the load kept going)."""
        acked = set(self.acked)
        where = host or self.find_primary()
        if where is None:
            raise RuntimeError("no primary to read the written rows from")
        with psycopg.connect(self.dsn(where), connect_timeout=5) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT id FROM {self.table}")
            present = {row[0] for row in cur.fetchall()}
        return sorted(acked - present)

    def longest_outage(self) -> Outage:
        gaps = [(b - a, a) for a, b in zip(self.ack_times, self.ack_times[1:], strict=False)]
        seconds, started = max(gaps, default=(0.0, 0.0))
        return Outage(seconds, started)


@dataclass(frozen=True)
class SyncSample:
    at: float  # monotonic
    primary: str
    synchronous_standby_names: str


class SyncSampler(threading.Thread):
    """Reads the primary's synchronous_standby_names every `interval`, so a test can tell what the
    synchronous set was at the moment something happened (a pod's deletion, say)."""

    def __init__(self, find_primary: Callable[[], str | None], dsn: Callable[[str], str],
                 interval: float = 0.1) -> None:
        super().__init__(name="sync-sampler", daemon=True)
        self.find_primary, self.dsn, self.interval = find_primary, dsn, interval
        self.samples: list[SyncSample] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        conn: psycopg.Connection | None = None
        host: str | None = None
        while not self._stopping.wait(self.interval):
            try:
                now_host = self.find_primary()
                if now_host is None:
                    continue
                if conn is None or now_host != host or conn.closed:
                    if conn is not None:
                        conn.close()
                    conn, host = psycopg.connect(self.dsn(now_host), connect_timeout=2, autocommit=True), now_host
                row = conn.execute("SELECT current_setting('synchronous_standby_names')").fetchone()
                self.samples.append(SyncSample(time.monotonic(), now_host, row[0] if row else ""))
            except psycopg.Error:
                if conn is not None:
                    with contextlib.suppress(psycopg.Error):
                        conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)

    def at(self, moment: float) -> SyncSample | None:
        """The last sample taken at or before `moment`."""
        before = [s for s in self.samples if s.at <= moment]
        return before[-1] if before else None


@dataclass(frozen=True)
class RecoverySample:
    at: float  # monotonic
    writable: tuple[str, ...]  # pods whose PostgreSQL answered that it is not in recovery
    answered: int  # how many answered at all


class RecoverySampler(threading.Thread):
    """Asks every pool pod's PostgreSQL `pg_is_in_recovery()` every `interval` (5 Hz by default),
    terminating pods included, so a test can show that two servers were never writable at once
    (issue #24: an old primary coming back out of recovery beside the new one).

    `pods` lists (pod name, address) and is read once a second; connections are kept open, and an
    address that does not answer is tried again at the next listing, not at every sample."""

    def __init__(self, pods: Callable[[], list[tuple[str, str]]], dsn: Callable[[str], str],
                 interval: float = 0.2) -> None:
        super().__init__(name="recovery-sampler", daemon=True)
        self.pods, self.dsn, self.interval = pods, dsn, interval
        self.samples: list[RecoverySample] = []
        self._stopping = threading.Event()
        self._conns: dict[tuple[str, str], psycopg.Connection] = {}

    def run(self) -> None:
        listed_at, pods = float("-inf"), []
        while not self._stopping.wait(self.interval):
            if time.monotonic() - listed_at >= 1.0:
                with contextlib.suppress(Exception):  # the API server may be down in a fault test
                    pods, listed_at = self.pods(), time.monotonic()
                    self._connect_missing(pods)
            answers = {pod: self._ask(pod, ip) for pod, ip in pods if (pod, ip) in self._conns}
            self.samples.append(RecoverySample(time.monotonic(), tuple(sorted(p for p, w in answers.items() if w)),
                                               sum(1 for w in answers.values() if w is not None)))
        for conn in self._conns.values():
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _connect_missing(self, pods: list[tuple[str, str]]) -> None:
        for key in set(self._conns) - set(pods):
            with contextlib.suppress(psycopg.Error):
                self._conns.pop(key).close()
        for pod, ip in pods:
            if (pod, ip) not in self._conns:
                with contextlib.suppress(psycopg.Error):
                    self._conns[(pod, ip)] = psycopg.connect(self.dsn(ip), connect_timeout=1, autocommit=True)

    def _ask(self, pod: str, ip: str) -> bool | None:
        """True when writable, False in recovery, None when it did not answer (the connection is dropped)."""
        conn = self._conns[(pod, ip)]
        try:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            return row is not None and not row[0]
        except psycopg.Error:
            with contextlib.suppress(psycopg.Error):
                conn.close()
            del self._conns[(pod, ip)]
            return None

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)

    def two_writable(self) -> list[RecoverySample]:
        """Samples in which more than one PostgreSQL was out of recovery."""
        return [s for s in self.samples if len(s.writable) > 1]
