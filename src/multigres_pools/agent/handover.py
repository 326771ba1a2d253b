"""Hurry multiorch's election while the primary's pod is going away (docs/agent.md, "Primary handover").

Multigres v0.1.0 has no switchover RPC: a primary leaves when its pod is deleted. The multipooler's
graceful shutdown announces INELIGIBLE and stops PostgreSQL (flushing its WAL to the standbys);
multiorch's LeaderResigned sees that at once, but the AppointLeader it runs waits out the failover
grace first (4 s plus 0-8 s of jitter by default), and every write waits with it. TriggerRecoveryNow is
multiorch's own way to act now: it re-polls every pooler, expires its grace periods and runs a
recovery cycle. So from the moment the confirmed primary's pod is terminating, the agent asks the
shard's multiorch for one cycle at a time until another pooler is the confirmed primary.

multiorch still chooses the new primary and runs the election (Recruit, Propose, promotion) exactly
as it would after the grace; the agent only shortens the wait. If multiorch cannot be reached, the
grace period ends it as before, and the agent says so.

It asks only once no other pooler streams WAL any more (the old primary's walsenders end after its
shutdown checkpoint was sent), or its pod is gone or its multipooler exited: INELIGIBLE is announced
before PostgreSQL stops, and a Recruit that stops the standbys' WAL receivers before the old
primary's shutdown checkpoint reached them leaves the old primary with WAL the new one lacks.
Restarted in recovery (standby.signal), such a server cannot follow the new timeline ("requested
timeline N is not a child of this server's history") and v0.1.0 never rewinds a pooler whose
PostgreSQL does not run: the pod stayed unready for good (seen on the real node). The multipooler's
exit alone would be too late to wait for: it comes when its gRPC server stops, up to --onterm-timeout
after PostgreSQL stopped.
multiorch's own grace (4 s and more) always outlasted the stop, so this is the order it relies on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.multigres.pools.plugins.module_utils.core import naming
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from ..dataplane.base import DataPlane, DataPlaneError, Pooler, PoolerId, RefusalReason, ShardTopology
from . import podinfo
from .context import Context, NotLeader, ShardView
from .kube import KubeUnavailable

POLL_S = 0.25
EXIT_POLL_S = 0.1  # while the old primary stops: one Status round and one GET of its pod each time
# Past multiorch's own longest wait (4 s + 8 s of jitter) and an election's 60 s action timeout.
GIVE_UP_S = 75.0


@dataclass(frozen=True)
class Leaving:
    """A primary whose pod is terminating: what the hurrying thread needs, copied out of the pass."""

    plane: DataPlane
    topology: ShardTopology
    orchestrators: dict[str, str]  # cell -> name prefix of the shard's multiorch pods there
    old: PoolerId
    pod: str
    namespace: str
    uid: str | None  # the terminating pod's: a pod recreated under the same name is not it
    targets: list[Manifest]  # where the outcome is reported (the pod, the MultigresShard)
    shard: tuple[str, str]  # (namespace, MultigresShard) for the metric


def orchestrator_prefixes(shard: Manifest, cells: tuple[str, ...]) -> dict[str, str]:
    """A multiorch registers under its pod name (`--service-id=$(POD_NAME)`), which starts with its
    Deployment's name: only the multiorchs of this shard are asked (another shard's share the cell)."""
    sid = podinfo.cr_shard_id(shard)
    return {cell: naming.multiorch_deployment_name(sid, cell) + "-" for cell in cells}


@dataclass
class _Asks:
    """One handover's TriggerRecoveryNow calls: at most one in flight, in a thread of its own. A call
    returns only when multiorch's recovery cycle ends, and v0.1.0's election cycle goes on after the
    promotion until its Recruit of the stopped old primary times out (15 s, docs/agent.md); waiting
    for the call delayed the confirmation, the event and the metric by 7 s in `make demo`."""

    answered: int = 0
    in_flight: bool = False
    error: str = ""
    not_leader: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        """Asks that reached a multiorch: answered, or the one still waiting for its cycle."""
        with self.lock:
            return self.answered + int(self.in_flight)


def _others(leaving: Leaving) -> list[Pooler]:
    """The records to ask, the leaving primary's left out. Its answer is not needed (the others say
    whether they still stream from it, and who leads the newest rule), and its multipooler is stopping:
    each Status made it try to connect to the stopping PostgreSQL, and once its pod's address is gone
    a call could only wait out its deadline, holding the round that looks for the new primary."""
    return [p for p in leaving.plane.list_poolers(leaving.topology) if p.id != leaving.old]


def _start_thread(run: Callable[[], None], name: str) -> None:
    threading.Thread(target=run, daemon=True, name=name).start()


class Handovers:
    """At most one hurrying thread per shard; started from a pass, never blocking it."""

    def __init__(self, ctx: Context, sleep: Callable[[float], None] = time.sleep,
                 spawn: Callable[[Callable[[], None], str], None] = _start_thread) -> None:
        self.ctx = ctx
        self._sleep = sleep
        self._spawn = spawn  # runs an ask; tests run it in line
        self._lock = threading.Lock()
        self._running: dict[tuple[str, ...], threading.Thread] = {}

    def primary_leaving(self, view: ShardView, pod: Manifest) -> threading.Thread | None:
        """Start hurrying the election if the pod being deleted is the shard's primary; the thread, or
        None when there is nothing to do (not the primary, already hurrying, no multiorch to ask)."""
        plane, old = view.dataplane, view.own_id(pod)
        if not self.ctx.config.hurry_handover or plane is None or not plane.supports_recovery_trigger:
            return None
        if view.shard is None or podinfo.deleting(view.shard) or old is None or view.poolers is None:
            return None  # a shard being deleted needs no new primary
        if not view.is_primary(pod):
            return None
        leaving = Leaving(plane, view.topology, orchestrator_prefixes(view.shard, view.topology.cells), old,
                          podinfo.name(pod), view.namespace, podinfo.uid(pod), view.event_targets(pod),
                          (view.namespace, podinfo.name(view.shard)))
        with self._lock:
            running = self._running.get(view.topology.key)
            if running is not None and running.is_alive():
                return None
            thread = threading.Thread(target=self._hurry, args=(leaving,), daemon=True,
                                      name=f"handover-{leaving.pod}")
            self._running[view.topology.key] = thread
        thread.start()
        return thread

    def wait(self, timeout: float | None = None) -> None:
        """Join every hurrying thread (tests, shutdown)."""
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join(timeout)

    def _hurry(self, leaving: Leaving) -> None:
        ctx, started, asks = self.ctx, self.ctx.clock(), _Asks()
        last_error, stopped = "", False
        while ctx.clock() - started < GIVE_UP_S and not asks.not_leader:
            try:
                leadership = leaving.plane.leadership(_others(leaving))
                confirmed = leadership.confirmed
                if confirmed is not None and confirmed.id != leaving.old:
                    self._done(leaving, confirmed.id, ctx.clock() - started, asks.count(), asks.error or last_error)
                    return
                stopped = stopped or not (leadership.streaming - {leaving.old}) or self._pooler_exited(leaving)
                if stopped:
                    self._ask_in_background(leaving, asks)
            except DataPlaneError as exc:
                last_error = exc.message
            except KubeUnavailable as exc:
                last_error = str(exc)
            self._sleep(POLL_S if stopped else EXIT_POLL_S)
        if asks.not_leader:
            return  # another agent leads now; multiorch's grace period ends the wait
        asked, detail = asks.count(), asks.error or last_error
        ctx.log.warning("primary handover: no other confirmed primary yet; multiorch decides on its own",
                        extra={"pod": leaving.pod, "asked": asked, "detail": detail})
        for target in leaving.targets:
            ctx.kube.event(target, "PrimaryHandoverSlow", f"{leaving.pod}: no other pooler was the confirmed "
                           f"primary {GIVE_UP_S:.0f}s after its pod began terminating (multiorch asked {asked} "
                           f"times{'; ' + detail if detail else ''})", warning=True)

    def _ask_in_background(self, leaving: Leaving, asks: _Asks) -> None:
        """One TriggerRecoveryNow, unless one is still waiting for its cycle (then it is enough)."""
        with asks.lock:
            if asks.in_flight:
                return
            asks.in_flight = True

        def run() -> None:
            answered, error, not_leader = 0, "", False
            try:
                answered = self._ask(leaving)
            except DataPlaneError as exc:
                error = exc.message
            except NotLeader:
                not_leader = True
            finally:
                with asks.lock:
                    asks.answered += answered
                    asks.error = error or asks.error
                    asks.not_leader = asks.not_leader or not_leader
                    asks.in_flight = False

        self._spawn(run, f"handover-ask-{leaving.pod}")

    def _pooler_exited(self, leaving: Leaving) -> bool:
        """The old primary's multipooler container has exited (after stopping PostgreSQL), or its pod is gone."""
        pod = self.ctx.kube.get_pod(leaving.namespace, leaving.pod)
        if pod is None or podinfo.uid(pod) != leaving.uid:
            return True
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        own = next((c for c in statuses if c.get("name") == podinfo.MULTIPOOLER_CONTAINER), None)
        return own is not None and "terminated" in (own.get("state") or {})

    def _ask(self, leaving: Leaving) -> int:
        """One TriggerRecoveryNow on the first of the shard's multiorchs that answers."""
        orchestrators = leaving.plane.orchestrators(leaving.topology, leaving.orchestrators)
        if not orchestrators:
            raise DataPlaneError(RefusalReason.ORCHESTRATOR_UNREACHABLE,
                                 "no multiorch of this shard is registered in its cells")
        failure: DataPlaneError | None = None
        for orch in orchestrators:
            self.ctx.effect("trigger-recovery")
            try:
                leaving.plane.trigger_recovery(orch)
                return 1
            except DataPlaneError as exc:
                failure = exc  # a stale record of a replaced multiorch pod: try the next one
        assert failure is not None
        raise failure

    def _done(self, leaving: Leaving, new: PoolerId, seconds: float, asked: int, last_error: str) -> None:
        ctx = self.ctx
        ctx.metrics.handover_seconds.labels(*leaving.shard).observe(seconds)
        ctx.log.info("primary handed over", extra={"pod": leaving.pod, "primary": str(new),
                                                   "seconds": round(seconds, 2), "asked": asked})
        how = (f"multiorch asked {asked} times to act without its failover grace" if asked else
               f"multiorch could not be asked ({last_error or 'no answer'}): its own failover grace decided")
        for target in leaving.targets:
            ctx.kube.event(target, "PrimaryHandedOver", f"{leaving.pod} → {new}: the new primary was confirmed "
                           f"{seconds:.1f}s after the old one's pod began terminating ({how})", warning=not asked)

