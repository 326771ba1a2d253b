"""Operator latency and footprint at fleet scale, against a real API server started for the run.

Measured in one run, each figure beside baselines measured in the same run:
- anchor: one bare `ansible_runner.run()` of a one-task playbook (the floor of any runner-based loop);
- spec change -> first write (a replica added to a converged shard, until the new pod exists), for
  our operator with warm runners, the same with `--no-warm-runners`, and the operator-sdk Ansible
  Operator pattern (one ansible-runner run of the reconcile playbook per event per CR, emulated
  with ansible-runner directly);
- no-op resync of N converged, generated shards (default 50 and 500): a fresh operator's start-up
  pass, decided from its caches; time, per-shard cost, playbook runs (should be 0) and the
  operator's peak RSS; against the Ansible Operator pattern resyncing the first 50 the same way;
- a real change in one shard while the 500 others resync: its first write.

Shards are converged beforehand with the engine itself (`reconcile.run_pass`, the module's code)
and the harness's kubelet stand-in, so the set-up does not depend on the operator under test.

    python -m bench.operator_loop [--shards 50,500]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, connect
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass

from bench.context import print_context
from multigres_pools.playground.localstack import (
    Process,
    child_env,
    ensure_namespace,
    free_port,
    http_get,
    install_crd,
    wait_for,
)

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
RECONCILE = REPO / "playbooks" / "reconcile.yml"


def anchor(workdir: Path) -> float:
    import ansible_runner

    playbook = workdir / "one-task.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                        "    - ansible.builtin.debug: {msg: hello}\n")
    best = float("inf")
    for i in range(3):
        (workdir / f"anchor{i}").mkdir()
        start = time.monotonic()
        result = ansible_runner.run(private_data_dir=str(workdir / f"anchor{i}"), playbook=str(playbook),
                                    inventory="localhost ansible_connection=local", quiet=True,
                                    envvars={k: v for k, v in child_env().items() if k in ("PATH", "ANSIBLE_CONFIG")})
        assert result.status == "successful", result.status
        best = min(best, time.monotonic() - start)
    return best


# The fleet's shards (two pods: the fewest a v0.1.0 shard may have), and the spec change measured: one more.
FLEET_REPLICAS = 2
CHANGED_REPLICAS = FLEET_REPLICAS + 1


def shard_doc(namespace: str, name: str, topo: str, replicas: int) -> dict:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterName": name, "globalTopoServer": {"address": topo, "rootPath": f"/multigres/{name}"},
                     "pools": {"main": {"cells": ["z1"], "replicasPerCell": replicas}}}}


def rss(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) * 1024 if match else 0


def children(pid: int) -> list[int]:
    """Every descendant of `pid`, from the parent ids in /proc/<n>/stat."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [c for c, parent in parents.items() if parent in frontier]
        found += kids
        frontier = kids
    return found


def metric(port: int, name: str) -> float:
    _, body = http_get(f"http://127.0.0.1:{port}/metrics")
    return sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", body, re.M))


class Operator:
    def __init__(self, kubeconfig: Path, namespace: str, workdir: Path, tag: str, *extra: str) -> None:
        self.port = free_port()
        self.proc = Process(f"operator-{tag}", [
            sys.executable, "-m", "multigres_pools.operator", "-n", namespace, "--kubeconfig", str(kubeconfig),
            "--health-addr", f"127.0.0.1:{self.port}", "--artifacts-dir", str(workdir / f"runner-{tag}"),
            "--log-format", "text", "--coalesce", "0.05", "--identity", f"bench-{tag}", "--no-leader-elect",
            *extra], workdir / f"operator-{tag}.log").start()
        self.started = time.monotonic()

    def ready(self) -> bool:
        return http_get(f"http://127.0.0.1:{self.port}/readyz")[0] == 200

    def decided(self) -> float:
        return metric(self.port, "multigres_pools_operator_decisions_total")

    def runs(self) -> float:
        return metric(self.port, "multigres_pools_operator_runner_runs_total")

    def stop(self) -> None:
        self.proc.stop()


class Converger:
    """Brings shards to convergence with the engine itself plus the kubelet stand-in."""

    def __init__(self, kube: KubeClient, kubelet: object, namespace: str) -> None:
        self.kube, self.kubelet, self.namespace = kube, kubelet, namespace

    def world(self) -> None:
        self.kubelet.mark_all_ready(self.namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")  # type: ignore[attr-defined]
        self.kubelet.bind_all_pvcs(self.namespace)  # type: ignore[attr-defined]
        self.kubelet.mark_deployments_available(self.namespace)  # type: ignore[attr-defined]

    def converge(self, names: list[str], rounds: int = 6) -> None:
        pending = list(names)
        for _ in range(rounds):
            still = []
            for name in pending:
                result = run_pass(self.kube, Request(namespace=self.namespace, name=name))
                self.kube.counts.clear()
                if result.failed:
                    raise RuntimeError(f"{name}: {result.msg}")
                if result.writes or result.requeue_after:
                    still.append(name)
            if not still:
                return
            self.world()
            pending = still
        raise RuntimeError(f"{len(pending)} shards did not converge: {pending[:5]}")


def first_write(kube: KubeClient, namespace: str, name: str, topo: str, replicas: int,
                trigger: Callable[[], None] | None = None) -> float:
    """Seconds from the spec change until the pod with the new index exists."""
    selector = f"{keys.LABEL_CLUSTER}={name},{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}"
    start = time.monotonic()
    kube.apply(shard_doc(namespace, name, topo, replicas), "bench")
    if trigger is not None:
        threading.Thread(target=trigger, daemon=True).start()
    wait_for(lambda: len(kube.list("v1", "Pod", namespace, selector)) >= replicas, 120, "the new pod", interval=0.02)
    return time.monotonic() - start


def pattern_run(namespace: str, name: str, kubeconfig: Path, workdir: Path) -> float:
    """The Ansible Operator pattern: one fresh ansible-runner run of the reconcile playbook for one
    event of one CR (its extravars as watches.yaml maps them)."""
    import ansible_runner

    pdd = Path(tempfile.mkdtemp(dir=workdir, prefix="pattern-"))
    start = time.monotonic()
    result = ansible_runner.run(private_data_dir=str(pdd), playbook=str(RECONCILE), quiet=True,
                                extravars={"shard_name": name, "shard_namespace": namespace},
                                envvars={**{k: v for k, v in child_env().items() if k in ("PATH", "ANSIBLE_CONFIG")},
                                         "KUBECONFIG": str(kubeconfig)})
    shutil.rmtree(pdd, ignore_errors=True)
    if result.status != "successful":
        raise RuntimeError(f"pattern run for {name}: {result.status}")
    return time.monotonic() - start


def pattern_resync(names: list[str], namespace: str, kubeconfig: Path, workdir: Path, concurrency: int) -> float:
    """The same no-op resync the operator does, the Ansible Operator way: one run per CR."""
    todo = list(names)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                name = todo.pop()
            pattern_run(namespace, name, kubeconfig, workdir)

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - start


def resync(kubeconfig: Path, namespace: str, count: int, workdir: Path, tag: str) -> dict[str, float]:
    """A fresh operator over `count` converged shards: its start-up pass is a full resync."""
    op = Operator(kubeconfig, namespace, workdir, tag)
    peak = peak_children = 0
    ready_at = None
    try:
        while op.decided() < count:
            if time.monotonic() - op.started > 900:
                raise TimeoutError(f"resync of {count} did not finish in 900s")
            assert op.proc.pid is not None
            if ready_at is None and op.ready():
                ready_at = time.monotonic()
            peak = max(peak, rss(op.proc.pid))
            peak_children = max(peak_children, sum(rss(c) for c in children(op.proc.pid)))
            time.sleep(0.05)
        done = time.monotonic()
        peak = max(peak, rss(op.proc.pid or 0))
        runs = op.runs()
    finally:
        op.stop()
    return {"total": done - op.started, "after_sync": done - (ready_at or op.started),
            "sync": (ready_at or done) - op.started, "rss": peak, "children": peak_children, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", default="50,500", help="fleet sizes for the no-op resync, comma-separated")
    p.add_argument("--pattern-shards", type=int, default=50,
                   help="shards the Ansible Operator pattern resyncs for the comparison")
    p.add_argument("--trials", type=int, default=3, help="spec changes measured per operator mode")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.shards.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="mgp-bench-operator-"))
    try:
        return _measure(sizes, args.pattern_shards, args.trials, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _line(what: str, value: float, unit: str = "s", goal: float | None = None, ratio: str = "") -> str:
    verdict = "" if goal is None else ("ok" if value <= goal else "OVER GOAL")
    goal_text = "" if goal is None else f"goal <={goal:g}{unit}"
    return f"{what:<58} {value:9.2f}{unit:<4} {goal_text:<14} {verdict:<9} {ratio}"


def _measure(sizes: list[int], pattern_shards: int, trials: int, workdir: Path) -> int:
    from multigres_pools.playground.cluster import Cluster
    from multigres_pools.playground.kubelet import FakeKubelet

    t_anchor = anchor(workdir)
    print(f"anchor: bare ansible-runner run, one task: {t_anchor:.2f}s (best of 3)", flush=True)
    with Cluster(workdir / "cluster") as cluster:
        kube = connect(str(cluster.kubeconfig))
        kubelet = FakeKubelet(cluster.api_client())
        install_crd(kube)
        topo = f"{cluster.topo_etcd.host}:{cluster.topo_etcd.port}"
        fleets: dict[int, tuple[str, list[str]]] = {}
        for size in sizes:
            ns = f"fleet{size}"
            ensure_namespace(kube, ns)
            names = [f"s{i:03d}" for i in range(size)]
            start = time.monotonic()
            for name in names:
                kube.apply(shard_doc(ns, name, topo, FLEET_REPLICAS), "bench")
            Converger(kube, kubelet, ns).converge(names)
            print(f"set-up: {size} shards converged with the engine in {time.monotonic() - start:.0f}s", flush=True)
            fleets[size] = (ns, names)

        # 1. Spec change -> first write, on the smallest fleet, three ways.
        ns, names = fleets[sizes[0]]
        latency: dict[str, list[float]] = {}
        for mode, extra in (("warm", ()), ("cold", ("--no-warm-runners",))):
            op = Operator(cluster.kubeconfig, ns, workdir, f"latency-{mode}", *extra)
            try:
                wait_for(op.ready, 120, "operator ready")
                wait_for(lambda o=op: o.decided() >= len(names), 300, "the start-up pass", interval=0.2)
                samples = []
                for trial in range(trials):
                    target = names[trial + (trials if mode == "cold" else 0)]
                    time.sleep(8)  # a warm run, if any, has started again and waits
                    samples.append(first_write(kube, ns, target, topo, CHANGED_REPLICAS))
                latency[mode] = samples
                print(f"measured: first write, {mode}: {', '.join(f'{x:.2f}s' for x in samples)}", flush=True)
            finally:
                op.stop()
        samples = []
        for trial in range(trials):
            target = names[2 * trials + trial]
            samples.append(first_write(kube, ns, target, topo, CHANGED_REPLICAS,
                                       trigger=lambda t=target: pattern_run(ns, t, cluster.kubeconfig, workdir)))
        latency["pattern"] = samples
        print(f"measured: first write, pattern: {', '.join(f'{x:.2f}s' for x in samples)}", flush=True)
        Converger(kube, kubelet, ns).converge(names[: 3 * trials])

        # 2. No-op resync of each fleet, and the pattern on the first `pattern_shards` shards.
        results = {}
        for size in sizes:
            results[size] = resync(cluster.kubeconfig, fleets[size][0], size, workdir, f"resync{size}")
            print(f"measured: resync of {size}: {results[size]}", flush=True)
        ns, names = fleets[sizes[0]]
        pattern_names = names[:pattern_shards]
        t_pattern = pattern_resync(pattern_names, ns, cluster.kubeconfig, workdir, concurrency=2)
        print(f"measured: pattern resync of {len(pattern_names)}: {t_pattern:.2f}s", flush=True)
        kube.close()  # long idle: the server may have closed the kept-alive connection

        # 3. A real change in one shard while the largest fleet resyncs: a running operator whose
        # periodic resync (every 30 s, spread over 3 s) has just queued every shard.
        big_ns, big_names = fleets[sizes[-1]]
        op = Operator(cluster.kubeconfig, big_ns, workdir, "during-resync", "--resync-period", "30")
        try:
            wait_for(op.ready, 300, "operator ready", interval=0.1)
            wait_for(lambda: op.decided() >= len(big_names), 600, "the start-up pass", interval=0.1)
            first_pass = op.decided()
            wait_for(lambda: op.decided() > first_pass, 120, "the periodic resync to start", interval=0.01)
            decided_before = op.decided() - first_pass
            t_during = first_write(kube, big_ns, big_names[len(big_names) // 2], topo, CHANGED_REPLICAS)
            decided_at_write = op.decided() - first_pass
        finally:
            op.stop()
        kube.close()

    med = {mode: statistics.median(v) for mode, v in latency.items()}
    print()
    print_context()
    print("same machine, same run; times are wall clock")
    for mode, what in (("warm", "ours, warm runners"), ("cold", "ours, --no-warm-runners"),
                       ("pattern", "Ansible Operator pattern (runner per event)")):
        print(_line(f"spec change -> first write: {what}", med[mode], goal=1.0 if mode == "warm" else None,
                    ratio=f"{med[mode] / t_anchor:4.1f}x anchor; pattern/ours {med['pattern'] / med[mode]:4.1f}x"
                          f"; samples {', '.join(f'{x:.2f}' for x in latency[mode])}"))
    for size in sizes:
        r = results[size]
        per = r["after_sync"] / size
        print(_line(f"no-op resync of {size} shards (start to all decided)", r["total"], goal=30.0,
                    ratio=f"cache sync {r['sync']:.2f}s, then {r['after_sync']:.2f}s; playbook runs: {r['runs']:.0f}"))
        print(f"{'  per shard (after the caches synced)':<58} {per * 1000:9.2f}ms")
        print(_line(f"  operator RSS, peak ({size} shards)", r["rss"] / MIB, " MiB", goal=300.0,
                    ratio=f"children peak {r['children'] / MIB:.0f} MiB (warm runs)"))
    if len(sizes) > 1:
        small, large = results[sizes[0]], results[sizes[-1]]
        growth = (large["after_sync"] / sizes[-1]) / (small["after_sync"] / sizes[0])
        print(f"{'  per-shard cost growth ' + f'{sizes[0]} -> {sizes[-1]}':<58} {growth:9.2f}x")
    ours_small = results[sizes[0]]["after_sync"] * len(pattern_names) / sizes[0]
    print(_line(f"Ansible Operator pattern: no-op resync of {len(pattern_names)} shards", t_pattern,
                ratio=f"{t_pattern / max(ours_small, 1e-9):.0f}x ours on the same shards "
                      f"({t_pattern / len(pattern_names):.2f}s per shard)"))
    print(_line(f"change in 1 shard while {sizes[-1] - 1} others resync: first write", t_during, goal=2.0,
                ratio=f"resync decisions when the change arrived: {decided_before:.0f}, at its write: "
                      f"{decided_at_write:.0f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
