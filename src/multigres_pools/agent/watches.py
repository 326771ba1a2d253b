"""The agent's two watches, pool pods (by label) and MultigresShards, on the runtime's one informer
(multigres_pools.watch). Each event hands the object to the Agent on a small worker pool, so a slow
data-plane step never stalls a watch; the first listing only tells the Agent which shards exist,
and its periodic pass takes it from there."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import Credentials

from ..watch import AsyncKube, Informer, Kind
from .core import Agent

log = logging.getLogger(__name__)

POOL_PODS = Kind("v1", "Pod", selector=f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
# Optional: in vars mode there may be no MultigresShard CRD at all, and the pods are all the agent needs.
SHARDS = Kind(keys.API_GROUP_VERSION, keys.SHARD_KIND, optional=True)
WORKERS = 4  # events of different pods are handled side by side, as many at once as this
STOP_POLL_S = 0.2  # how soon a set stop flag ends the watches


def _logged(future: Future[object]) -> None:
    exc = future.exception()
    if exc is not None:
        log.error("handling a watch event failed", exc_info=exc)


def informers(api: AsyncKube, agent: Agent, namespaces: list[str] | None,
              submit: Callable[[Callable[[Manifest], object], Manifest], None]) -> list[Informer]:
    """One pod and one shard informer per watched namespace (None: cluster-wide)."""
    out: list[Informer] = []
    scopes: list[str | None] = [*namespaces] if namespaces else [None]
    for namespace in scopes:
        pods = Informer(api, POOL_PODS, namespace, on_event=lambda *_: None)

        def on_pod(event_type: str, obj: Manifest, _old: Manifest | None, pods: Informer = pods) -> None:
            if event_type == "DELETED":
                return  # the engine's finalizer keeps a pool pod until the agent has let it go
            if not pods.synced.is_set():
                agent.remember(obj)  # the first listing: no reconcile storm at start
            else:
                submit(agent.on_pod, obj)

        def on_shard(event_type: str, obj: Manifest, _old: Manifest | None) -> None:
            if event_type != "DELETED":
                submit(agent.on_shard, obj)

        pods.on_event = on_pod
        out += [pods, Informer(api, SHARDS, namespace, on_event=on_shard)]
    return out


async def watch_until_stopped(agent: Agent, creds: Credentials, namespaces: list[str] | None,
                              stop: threading.Event, ready: threading.Event) -> None:
    """Run the watches until `stop` is set; `ready` is set once every first listing is complete."""
    api = AsyncKube(creds)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="event")

    def submit(handler: Callable[[Manifest], object], obj: Manifest) -> None:
        if not stop.is_set():
            pool.submit(handler, obj).add_done_callback(_logged)

    watches = informers(api, agent, namespaces, submit)
    tasks = [asyncio.create_task(w.run(), name=f"watch {w.kind.kind} {w.namespace or '*'}") for w in watches]
    try:
        while not stop.is_set():
            if not ready.is_set() and all(w.synced.is_set() for w in watches):
                ready.set()
            ended = next((t for t in tasks if t.done()), None)
            if ended is not None:  # run() only returns by raising: a bug, not a server problem
                raise RuntimeError(f"{ended.get_name()} ended") from ended.exception()
            await asyncio.sleep(STOP_POLL_S)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await api.close()
        pool.shutdown(wait=True, cancel_futures=True)
