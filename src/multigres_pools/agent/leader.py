"""One active agent: the operator's Lease election, driven from a thread.

The agent's handlers run in kopf's worker threads and the periodic pass in its own, so leadership is
a plain `is_leader()` they all ask before touching anything. Leadership counts from the start of the
last successful renewal and lapses after `renew_deadline_s`, which is shorter than the Lease
duration others wait out: a partitioned agent stops acting before anyone else may start.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..lease import LeaseElector

log = logging.getLogger("multigres_pools.agent.leader")


class LeaseThread:
    def __init__(self, api: Any, namespace: str, name: str, identity: str, duration_s: int = 15,
                 renew_deadline_s: float = 10.0, renew_every_s: float = 2.0) -> None:
        self.lease = LeaseElector(api, namespace, name, identity, lease_duration=duration_s,
                                  renew_deadline=renew_deadline_s, retry_period=renew_every_s)
        self.renew_deadline_s, self.renew_every_s = renew_deadline_s, renew_every_s
        self._valid_until = 0.0
        self._stop = threading.Event()

    def is_leader(self) -> bool:
        return time.monotonic() < self._valid_until

    def run(self) -> None:
        while not self._stop.is_set():
            was, started = self.is_leader(), time.monotonic()
            try:
                if self.lease.try_acquire_or_renew():
                    self._valid_until = started + self.renew_deadline_s
            except Exception as exc:  # an unreachable API server is a failed renewal, never leadership
                log.warning("lease renewal failed", extra={"detail": str(exc)})
            if self.is_leader() != was:
                log.info("leadership changed", extra={"leader": self.is_leader()})
            self._stop.wait(self.renew_every_s)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="lease", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
        self.lease.is_leader = self.is_leader()
        self._valid_until = 0.0
        self.lease.release()
