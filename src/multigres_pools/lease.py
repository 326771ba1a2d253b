"""Lease-based leader election (coordination.k8s.io/v1), so only one operator instance acts.

Same timing model as client-go: a holder renews every `retry_period`; if it could not renew for
`renew_deadline` it stops acting (the process exits and the Deployment restarts it as a
follower); others take over once `lease_duration` passed since the last renewal. All writes use
the Lease's resourceVersion, so two candidates can never both win.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseView:
    holder: str | None
    renew_time: dt.datetime | None
    duration: int | None


def can_take(view: LeaseView | None, identity: str, now: dt.datetime) -> bool:
    """Whether `identity` may write itself as holder: free, ours, or expired."""
    if view is None or not view.holder or view.holder == identity:
        return True
    if view.renew_time is None or view.duration is None:
        return True
    return view.renew_time + dt.timedelta(seconds=view.duration) < now


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class LeaseElector:
    def __init__(self, api_client: Any, namespace: str, name: str, identity: str,
                 lease_duration: int = 15, renew_deadline: float = 10, retry_period: float = 2,
                 clock: Callable[[], dt.datetime] = _now) -> None:
        from kubernetes import client

        self.api = client.CoordinationV1Api(api_client)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.is_leader = False

    def _view(self, lease: Any) -> LeaseView:
        spec = lease.spec
        return LeaseView(spec.holder_identity, spec.renew_time, spec.lease_duration_seconds)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this instance holds the Lease afterwards."""
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        now = self.clock()
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=client.V1LeaseSpec(holder_identity=self.identity, acquire_time=now, renew_time=now,
                                        lease_duration_seconds=self.lease_duration, lease_transitions=0))
            try:
                self.api.create_namespaced_lease(self.namespace, body)
            except ApiException as create_exc:
                if create_exc.status == 409:
                    return False
                raise
            return True
        if not can_take(self._view(lease), self.identity, now):
            return False
        spec = lease.spec
        if spec.holder_identity != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = self.lease_duration
        spec.renew_time = now
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as exc:
            if exc.status == 409:  # someone else wrote first; the resourceVersion protected us
                return False
            raise
        return True

    def release(self) -> None:
        """Hand the Lease over at once on a clean shutdown instead of making others wait it out."""
        from kubernetes.client.rest import ApiException

        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.lease_duration_seconds = 1
                self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as exc:
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc.reason)

    async def _attempt(self) -> bool:
        try:
            return await asyncio.to_thread(self.try_acquire_or_renew)
        except Exception as exc:  # API unreachable: treated as a failed attempt, never as leadership
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    async def acquire(self) -> None:
        """Wait until this instance leads."""
        while not await self._attempt():
            await asyncio.sleep(self.retry_period)
        self.is_leader = True
        log.info("became leader (lease %s/%s, identity %s)", self.namespace, self.name, self.identity)

    async def hold(self) -> None:
        """Renew until a renewal fails for longer than `renew_deadline`; then return (leadership lost)."""
        loop = asyncio.get_running_loop()
        last_ok = loop.time()
        while True:
            await asyncio.sleep(self.retry_period)
            if await self._attempt():
                last_ok = loop.time()
            elif loop.time() - last_ok > self.renew_deadline:
                self.is_leader = False
                log.error("lost leadership of lease %s/%s", self.namespace, self.name)
                return
