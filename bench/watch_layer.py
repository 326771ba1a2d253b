"""The runtime's watch layer against kopf, on a real API server started for the run.

Both watchers do what the agent does: watch pool pods (by label) and MultigresShards in one
namespace and hand every object to a handler. Measured in one run, for each: the time and CPU to
the end of the first listing of N shards and 3N pods, then the CPU to see one change of every pod,
and the peak RSS. Our informer (multigres_pools.watch) is the subject, kopf 1.45.2 the anchor; kopf
is no longer a dependency, so the anchor runs only where it is installed
(`.venv/bin/pip install kopf==1.45.2`).

    python -m bench.watch_layer [--shards 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import (
    Credentials,
    KubeClient,
    connect,
    load_credentials,
)

from bench.context import print_context

POD_SELECTOR = {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}


def _stats(start_cpu: float) -> dict[str, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": usage.ru_utime + usage.ru_stime - start_cpu, "rss_mib": usage.ru_maxrss / 1024}


class Counter:
    """Counts what a watcher saw; prints one JSON line when the listing, then the changes, are complete."""

    def __init__(self, pods: int, shards: int, round_no: str) -> None:
        self.pods, self.shards, self.round = pods, shards, round_no
        self.seen: dict[str, int] = {}
        self.changed: set[str] = set()
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.listed = threading.Event()
        self.done = threading.Event()

    def saw(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        with self.lock:
            self.seen[f"{kind}/{meta.get('name')}"] = 1
            if (meta.get("annotations") or {}).get("bench/changed") == self.round:
                self.changed.add(str(meta.get("name")))
            if not self.listed.is_set() and len(self.seen) >= self.pods + self.shards:
                self.listed.set()
                print(json.dumps({"listed_s": time.monotonic() - self.started, **_stats(0.0)}), flush=True)
            if not self.done.is_set() and len(self.changed) >= self.pods:
                self.done.set()
                print(json.dumps({"changed": len(self.changed), **_stats(0.0)}), flush=True)


def run_informer(creds: Credentials, namespace: str, counter: Counter) -> None:
    from multigres_pools.watch import AsyncKube, Informer, Kind

    async def main() -> None:
        api = AsyncKube(creds)
        pods = Kind("v1", "Pod", selector=f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
        shards = Kind(keys.API_GROUP_VERSION, keys.SHARD_KIND)
        watches = [Informer(api, kind, namespace, on_event=lambda _t, obj, _o, k=kind.kind: counter.saw(k, obj))
                   for kind in (pods, shards)]
        tasks = [asyncio.create_task(w.run()) for w in watches]
        while not counter.done.is_set():
            await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await api.close()

    asyncio.run(main())


def run_kopf(creds: Credentials, namespace: str, counter: Counter) -> None:
    import kopf

    registry = kopf.OperatorRegistry()
    stop = threading.Event()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=creds.server, ca_data=creds.ca_data, certificate_data=creds.cert_data,
                                   private_key_data=creds.key_data, insecure=creds.insecure)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True
        settings.execution.max_workers = 4

    @kopf.on.event("", "v1", "pods", labels=POD_SELECTOR, registry=registry)
    def pod(body: kopf.Body, **_: Any) -> None:
        counter.saw("Pod", json.loads(json.dumps(dict(body), default=dict)))

    @kopf.on.event(keys.API_GROUP, keys.API_VERSION, keys.SHARD_PLURAL, registry=registry)
    def shard(body: kopf.Body, **_: Any) -> None:
        counter.saw(keys.SHARD_KIND, json.loads(json.dumps(dict(body), default=dict)))

    threading.Thread(target=lambda: (counter.done.wait(), stop.set()), daemon=True).start()
    asyncio.run(kopf.operator(registry=registry, standalone=True, namespaces=[namespace], stop_flag=stop))


def watcher(args: argparse.Namespace) -> int:
    import logging

    logging.basicConfig(level=logging.ERROR)
    creds = load_credentials(args.kubeconfig)
    counter = Counter(args.pods, args.shards, args.round)
    (run_kopf if args.watcher == "kopf" else run_informer)(creds, args.namespace, counter)
    return 0


def _pod(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                            "labels": POD_SELECTOR},
            "spec": {"containers": [{"name": "c", "image": "example.invalid/none"}]}}


def _shard(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterName": name,
                     "globalTopoServer": {"address": "127.0.0.1:2379", "rootPath": f"/multigres/{name}"},
                     "pools": {"main": {"cells": ["z1"], "replicasPerCell": 3}}}}


def measure(kind: str, kubeconfig: Path, namespace: str, kube: KubeClient, pods: int, shards: int,
            round_no: int) -> dict[str, float]:
    proc = subprocess.Popen([sys.executable, "-m", "bench.watch_layer", "--watcher", kind, "--kubeconfig",
                             str(kubeconfig), "--namespace", namespace, "--pods", str(pods), "--shards", str(shards),
                             "--round", str(round_no)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    listed = json.loads(proc.stdout.readline())
    for i in range(pods):
        kube.merge_patch("v1", "Pod", namespace, f"p-{i}",
                         {"metadata": {"annotations": {"bench/changed": str(round_no)}}}, field_manager="bench")
    changed = json.loads(proc.stdout.readline())
    proc.wait(timeout=120)
    return {"listed_s": listed["listed_s"], "list_cpu_s": listed["cpu_s"],
            "change_cpu_s": changed["cpu_s"] - listed["cpu_s"], "rss_mib": changed["rss_mib"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=500)
    parser.add_argument("--watcher", choices=("informer", "kopf"))
    parser.add_argument("--kubeconfig")
    parser.add_argument("--namespace")
    parser.add_argument("--pods", type=int)
    parser.add_argument("--round", default="0")
    args = parser.parse_args()
    if args.watcher:
        return watcher(args)
    print_context()
    from multigres_pools.playground.cluster import Cluster
    from multigres_pools.playground.localstack import ensure_namespace, install_crd

    try:
        import kopf  # noqa: F401
        kinds = ["informer", "kopf"]
    except ImportError:
        kinds = ["informer"]
        print("kopf is not installed: the anchor is skipped (pip install kopf==1.45.2)")
    pods = 3 * args.shards
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp, Cluster(Path(tmp) / "cluster") as cluster:
        kube = connect(str(cluster.kubeconfig))
        install_crd(kube)
        namespace = "bench-watch"
        ensure_namespace(kube, namespace)
        start = time.monotonic()
        for i in range(args.shards):
            kube.create(_shard(namespace, f"s-{i}"), field_manager="bench")
        for i in range(pods):
            kube.create(_pod(namespace, f"p-{i}"), field_manager="bench")
        print(f"set-up: {args.shards} MultigresShards and {pods} pool pods in {time.monotonic() - start:.0f}s")
        results = {kind: measure(kind, Path(cluster.kubeconfig), namespace, kube, pods, args.shards, n)
                   for n, kind in enumerate(kinds)}
    for kind, r in results.items():
        print(f"{kind:9s} first listing {r['listed_s']:5.2f}s (CPU {r['list_cpu_s']:5.2f}s)  "
              f"{pods} pod changes: CPU {r['change_cpu_s']:5.2f}s  peak RSS {r['rss_mib']:6.1f} MiB")
    if "kopf" in results:
        ours, anchor = results["informer"], results["kopf"]
        print(f"ratios informer/kopf: first listing {ours['listed_s'] / anchor['listed_s']:.2f}x, CPU of the "
              f"changes {ours['change_cpu_s'] / anchor['change_cpu_s']:.2f}x, peak RSS "
              f"{ours['rss_mib'] / anchor['rss_mib']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
