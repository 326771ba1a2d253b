"""The operator's controller and informers in this process against the real API server, with the
real ansible-runner and reconcile playbook; every request its own client sends is counted."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, load_credentials
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

from multigres_pools.operator.cache import WATCHED
from multigres_pools.operator.controller import Controller, Settings
from multigres_pools.operator.runner import DEFAULT_PLAYBOOK, PlaybookRunner
from multigres_pools.watch import AsyncKube, Informer

T = TypeVar("T")


def shard_doc(namespace: str, name: str, replicas: int = 2) -> Manifest:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterName": name,
                     "globalTopoServer": {"address": "topo.invalid:2379", "rootPath": f"/multigres/{name}"},
                     "pools": {"main": {"cells": ["z1"], "replicasPerCell": replicas}}}}


class LiveOperator:
    """Controller + one informer per watched kind, on an event loop in a thread of its own."""

    def __init__(self, kubeconfig: Path, namespace: str, root: Path, *, concurrency: int = 2,
                 batch_size: int = 10, playbook: Path = DEFAULT_PLAYBOOK, warm: bool = True,
                 policy: SpecPolicy | None = None) -> None:
        self.creds = load_credentials(str(kubeconfig))
        self.clients: list[KubeClient] = []
        policy = policy or SpecPolicy()
        # As the operator's main does: the runs get the allow-lists through the environment.
        runner = PlaybookRunner(root=root, playbook=playbook,
                                envvars={"KUBECONFIG": str(kubeconfig), **policy.environment()})
        self.ctl = Controller(runner, Settings(concurrency, coalesce=0.05, resync_period=3600, batch_size=batch_size,
                                               warm_runners=warm, policy=policy), live=self._client)
        self.namespace = namespace
        self.loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._synced = threading.Event()
        self._thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._synced.wait(120):
            raise AssertionError("the operator's caches did not sync")

    def _client(self) -> KubeClient:
        client = KubeClient(self.creds)
        self.clients.append(client)
        return client

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        aio = AsyncKube(self.creds)
        informers = [Informer(aio, kind, self.namespace, functools.partial(self.ctl.on_event, kind))
                     for kind in WATCHED]
        self.ctl.cache.informers = informers
        tasks = [asyncio.create_task(i.run()) for i in informers]
        synced = asyncio.Event()
        await asyncio.gather(*(i.synced.wait() for i in informers))
        synced.set()
        self._synced.set()
        try:
            await self.ctl.run(self._stop, synced)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await aio.close()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the operator's loop (the queue is not thread-safe) and return its result."""
        async def wrapped() -> T:
            return fn()
        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result(30)

    def resync(self) -> None:
        """What the periodic resync does: every known shard, queued as background work."""
        self.call(lambda: [self.ctl.queue.add(k, delay=0, background=True) for k in self.ctl.router.shards()])

    def stop(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(120)
        for client in self.clients:
            client.close()

    # --- what it did ------------------------------------------------------------------------------
    def metric(self, name: str, **labels: str) -> float:
        return sum(s.value for m in self.ctl.metrics.registry.collect() for s in m.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))

    def runner_runs(self) -> float:
        return self.metric("multigres_pools_operator_runner_runs_total")

    def decisions(self, verdict: str | None = None) -> float:
        return self.metric("multigres_pools_operator_decisions_total", **({"verdict": verdict} if verdict else {}))

    def requests(self) -> dict[str, int]:
        """Requests the operator process itself sent (reads its caches could not answer)."""
        out: dict[str, int] = {}
        for client in self.clients:
            for verb, n in client.counts.items():
                out[verb] = out.get(verb, 0) + n
        return out

    def idle(self) -> bool:
        """Nothing running and nothing due (a shard may wait for its requeue_after)."""
        def check() -> bool:
            q = self.ctl.queue.queue
            deadline = q.next_deadline()
            return not q.processing() and (deadline is None or deadline > self.ctl.queue.now())
        return self.call(check)
