"""Lease-based leader election (coordination.k8s.io/v1), shared by the operator and the agent.

The semantics of client-go's leaderelection:
* A candidate never compares the holder's renewTime with its own wall clock. It notes, on its own
  monotonic clock, the moment it last saw the Lease record change; the holder has expired once
  leaseDurationSeconds passed since then without a change (`Observation`, `may_take`).
* Acquire and renew are a read then a write carrying the read resourceVersion: of two candidates
  writing at once, the apiserver lets one win and answers 409 to the other.
* The holder counts its leadership from the START of its last successful renewal and stops acting
  once `renew_deadline` passed since then (`holds`). A candidate waits `lease_duration` from a
  moment after that renewal's write, and lease_duration > renew_deadline, so the old holder has
  stopped before anyone may start. Every API call has a timeout of at most half the renew deadline,
  so one attempt (read + write) never outlives it.

`LeaderElector` runs the loop in a thread; `is_leader()` is a pure clock comparison, so it turns
False on time even when the thread is late (a frozen process resumes with leadership already gone).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import write_fence
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import Credentials, KubeClient, KubeError

log = logging.getLogger(__name__)

# Candidates spread their attempts by up to this fraction of the retry period (client-go: 1.2).
JITTER = 0.2
LEASE_API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class ElectionTiming:
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if self.retry_period <= 0:
            raise ValueError(f"--retry-period must be positive, got {self.retry_period}")
        if self.renew_deadline <= self.retry_period * (1 + JITTER):
            raise ValueError(f"--renew-deadline ({self.renew_deadline}s) must be longer than --retry-period "
                             f"({self.retry_period}s) x {1 + JITTER}, so a holder retries before it gives up")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(f"--lease-duration ({self.lease_duration}s) must be longer than --renew-deadline "
                             f"({self.renew_deadline}s): a holder must stop acting before others may take over")

    @property
    def call_timeout(self) -> float:
        """Seconds per API call: an attempt is at most two calls, which fit the renew deadline."""
        return min(self.renew_deadline / 2, max(self.retry_period, 1.0))


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease fields a change of which shows the holder alive. Times stay strings: compared for
    change, never read as clocks."""

    holder: str | None
    duration: int | None
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def of(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(spec.get("holderIdentity") or None, spec.get("leaseDurationSeconds"), spec.get("acquireTime"),
                   spec.get("renewTime"), int(spec.get("leaseTransitions") or 0))


@dataclass(frozen=True)
class Observation:
    """The record a candidate last saw and when (its monotonic clock) it saw that record change."""

    record: LeaseRecord | None
    seen_at: float


def observe(previous: Observation | None, record: LeaseRecord | None, now: float) -> Observation:
    """The observation after reading `record` at `now`: the clock restarts only when the record changed."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def may_take(seen: Observation, identity: str, now: float, default_duration: int) -> bool:
    """Whether `identity` may write itself as holder: free, ours, or unchanged for its duration."""
    record = seen.record
    if record is None or not record.holder or record.holder == identity:
        return True
    duration = record.duration if record.duration and record.duration > 0 else default_duration
    return now >= seen.seen_at + duration


def holds(renewed_at: float | None, now: float, renew_deadline: float) -> bool:
    """Whether a holder whose last successful renewal STARTED at `renewed_at` may still act."""
    return renewed_at is not None and now < renewed_at + renew_deadline


def _micro_time() -> str:
    # MicroTime for the record's readers (kubectl); no candidate reads it as a clock.
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class LeaseApi:
    """The Lease's three calls, plain dicts. `kube` is the election's own client (its own connection,
    its timeout the election's call timeout): a slow request of the agent or the operator never
    delays a renewal."""

    def __init__(self, kube: KubeClient, namespace: str, name: str) -> None:
        self.kube, self.namespace, self.name = kube, namespace, name

    def get(self) -> dict[str, Any] | None:
        return self.kube.get(LEASE_API_VERSION, "Lease", self.namespace, self.name)

    def write(self, lease: dict[str, Any], create: bool) -> bool:
        """Create, or replace at the read resourceVersion; False when another writer won (409)."""
        try:
            if create:
                self.kube.create(lease, field_manager=keys.FIELD_MANAGER)
            else:
                self.kube.replace(lease, field_manager=keys.FIELD_MANAGER)
        except KubeError as exc:
            if exc.status == 409:
                return False
            raise
        return True


def lease_api(creds: Credentials, namespace: str, name: str, timeout: float) -> LeaseApi:
    return LeaseApi(KubeClient(creds, timeout=timeout, user_agent="multigres-pools-lease"), namespace, name)


class LeaderElector:
    """One candidate. `start()` runs the election in a thread; `is_leader()` may be called anywhere.

    `on_change(leading, reason)` is called from the election thread when leadership is gained or lost
    (reason: acquired, renew deadline passed, released). Once lost, the elector stops: the caller
    ends its work and exits, and runs as a fresh candidate after its restart (client-go's model).
    `fence`, when given, is the file published for the children of the holder (write_fence).
    """

    def __init__(self, api: LeaseApi, identity: str, timing: ElectionTiming,
                 on_change: Callable[[bool, str], None] = lambda leading, reason: None,
                 fence: Path | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.api, self.identity, self.timing = api, identity, timing
        self.on_change, self.fence, self.clock = on_change, fence, clock
        self.seen: Observation | None = None
        self.renewed_at: float | None = None
        self.was_leader = False
        self.lost_reason: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._turn = threading.Lock()  # the election thread and release() never write at once
        self._losing = threading.Lock()
        if fence is not None:
            write_fence.publish(fence, 0)

    @property
    def where(self) -> str:
        return f"{self.api.namespace}/{self.api.name}"

    def is_leader(self) -> bool:
        return self.lost_reason is None and holds(self.renewed_at, self.clock(), self.timing.renew_deadline)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this candidate holds the Lease afterwards (renewed_at is then its start)."""
        started = self.clock()
        lease = self.api.get()
        record = None if lease is None else LeaseRecord.of(lease)
        self.seen = observe(self.seen, record, started)
        if not may_take(self.seen, self.identity, started, self.timing.lease_duration):
            return False
        now = _micro_time()
        if lease is None:
            lease = {"apiVersion": LEASE_API_VERSION, "kind": "Lease",
                     "metadata": {"name": self.api.name, "namespace": self.api.namespace}, "spec": {}}
        spec = lease.setdefault("spec", {})
        if spec.get("holderIdentity") != self.identity:
            spec["acquireTime"] = now
            if spec.get("holderIdentity"):
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            spec.setdefault("leaseTransitions", 0)
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=self.timing.lease_duration, renewTime=now)
        if not self.api.write(lease, create=record is None):
            return False
        self.seen = Observation(LeaseRecord.of(lease), started)
        self.renewed_at = started
        if self.fence is not None:
            write_fence.publish(self.fence, started + self.timing.renew_deadline)
        return True

    def _attempt(self) -> None:
        try:
            with self._turn:
                # Past the deadline it is over, even if the Lease is still ours: no silent comeback.
                if not self._stop.is_set() and not self.check():
                    self.try_acquire_or_renew()
        except Exception as exc:  # API unreachable or slow: a failed attempt, never leadership
            log.warning("lease %s: attempt failed: %s", self.where, exc)

    def run(self) -> None:
        while not self._stop.is_set():
            self._attempt()
            if self.check():
                return
            leading = self.is_leader()
            if leading and not self.was_leader:
                self.was_leader = True
                log.info("became leader of lease %s as %s", self.where, self.identity)
                self.on_change(True, "acquired")
            period = self.timing.retry_period
            self._stop.wait(period if leading else period * (1 + random.uniform(0, JITTER)))

    def check(self) -> bool:
        """True once leadership was lost. Users call it before acting, so the first action after a
        frozen process resumes is refused even before the late election thread notices."""
        if self.was_leader and self.lost_reason is None and not self.is_leader():
            self._lose(f"no successful renewal within the renew deadline ({self.timing.renew_deadline}s)")
        return self.lost_reason is not None

    def _lose(self, reason: str) -> None:
        """Leadership is in doubt: fence the children at once, then tell the caller (once)."""
        with self._losing:
            if self.lost_reason is not None:
                return
            self.lost_reason = reason
        if self.fence is not None:
            write_fence.publish(self.fence, 0)
        log.error("lost leadership of lease %s: %s", self.where, reason)
        self.on_change(False, reason)

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name=f"lease-{self.api.name}", daemon=True)
        self._thread.start()
        return self._thread

    def wait_leading(self, timeout: float | None = None) -> bool:
        """Block until leading (True), stopped or lost (False)."""
        deadline = None if timeout is None else self.clock() + timeout
        while not self._stop.is_set() and self.lost_reason is None:
            if self.is_leader():
                return True
            if deadline is not None and self.clock() >= deadline:
                return False
            self._stop.wait(0.05)
        return False

    def stop(self, release: bool = True) -> None:
        """Stop the election; a holder still certain of its lease hands it over at once instead of
        making the others wait it out (the write carries the read resourceVersion, so a lease taken
        by someone else meanwhile is never touched)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.timing.renew_deadline)
        with self._turn:
            leading = self.is_leader()
            # A stop, not a loss: check() must not report "lost leadership" from here on.
            self.was_leader, self.renewed_at = False, None
            if self.fence is not None:
                write_fence.publish(self.fence, 0)
            if not (release and leading):
                return
            try:
                lease = self.api.get()
                if lease is not None and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                    lease["spec"].update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro_time())
                    if self.api.write(lease, create=False):
                        log.info("released lease %s", self.where)
                        self.on_change(False, "released")
            except Exception as exc:
                log.warning("could not release lease %s: %s", self.where, exc)


def add_arguments(parser: Any, lease_name: str, namespace_default: str | None, namespace_help: str) -> None:
    """The election flags of the operator and the agent (same names, defaults and checks)."""
    d = ElectionTiming()
    parser.add_argument("--lease-namespace", default=namespace_default, help=namespace_help)
    parser.add_argument("--lease-name", default=lease_name,
                        help="name of the coordination.k8s.io/v1 Lease (default %(default)s)")
    parser.add_argument("--lease-duration", type=int, default=d.lease_duration,
                        help="seconds a candidate waits after the Lease last changed before taking it over "
                             "(default %(default)s)")
    parser.add_argument("--renew-deadline", type=float, default=d.renew_deadline,
                        help="seconds without a successful renewal after which the holder stops every write and "
                             "exits; shorter than --lease-duration (default %(default)s)")
    parser.add_argument("--retry-period", type=float, default=d.retry_period,
                        help="seconds between attempts to acquire or renew (default %(default)s)")


def timing_from(args: Any, parser: Any) -> ElectionTiming:
    """The validated timing; a bad combination is a usage error (exit 2) naming the flag."""
    try:
        return ElectionTiming(args.lease_duration, args.renew_deadline, args.retry_period)
    except ValueError as exc:
        parser.error(str(exc))
        raise  # parser.error exits; this keeps type checkers content


def leadership_metrics(registry: Any, prefix: str) -> tuple[Any, Any]:
    """(gauge: 1 while leading, counter of changes by `change`: acquired/lost/released)."""
    from prometheus_client import Counter, Gauge

    return (Gauge(f"{prefix}_leader", "1 while this instance holds the Lease.", registry=registry),
            Counter(f"{prefix}_leadership_changes_total",
                    "Leadership changes of this instance: acquired, lost (renew deadline passed), released.",
                    ["change"], registry=registry))
