"""Operator latency and footprint, against a real API server started for the run.

Measures, on this machine and in this run:
- anchor: one bare `ansible_runner.run()` of a one-task playbook (the floor of any runner-based loop);
- spec change -> first write: a replica is added to a converged shard; the time until the new pod
  object exists (watch), and until the status reports the new generation;
- converged no-op resync of N shards (default 50): a fresh operator starts with N converged shards
  and runs one pass for each; the time until all N passes are done;
- the operator's memory: peak RSS of the operator process during the resync (its ansible-playbook
  children are reported separately: they come and go with each pass).

Goals (issue 6): first write < 2 s, resync of 50 shards < 30 s, operator RSS < 300 MiB. Times are
also printed as ratios to the anchor, which moves with the machine the way the operator does.

    python -m bench.operator_loop [--shards 50]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils import keys

from multigres_pools.playground.localstack import (
    Process,
    child_env,
    ensure_namespace,
    free_port,
    http_get,
    install_crd,
    reconcile_count,
    wait_for,
)

REPO = Path(__file__).resolve().parents[1]

MIB = 1024 * 1024


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


def shard_doc(namespace: str, name: str, topo: str, replicas: int) -> dict:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterName": name, "globalTopoServer": {"address": topo},
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


def start_operator(kubeconfig: Path, namespace: str, workdir: Path, tag: str,
                   batch_size: int | None) -> tuple[Process, int]:
    port = free_port()
    batching = [] if batch_size is None else ["--batch-size", str(batch_size)]
    proc = Process(f"operator-{tag}", [sys.executable, "-m", "multigres_pools.operator", "-n", namespace,
                                       "--kubeconfig", str(kubeconfig), "--health-addr", f"127.0.0.1:{port}",
                                       "--artifacts-dir", str(workdir / f"runner-{tag}"), "--log-format", "text",
                                       "--coalesce", "0.05", "--identity", f"bench-{tag}", *batching],
                   workdir / f"operator-{tag}.log")
    return proc.start(), port


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=None,
                   help="passed to the operator's --batch-size (default: the operator's default)")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="mgp-bench-operator-"))
    try:
        return _measure(args.shards, workdir, args.batch_size)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _measure(shards: int, workdir: Path, batch_size: int | None) -> int:
    from multigres_pools.playground.cluster import Cluster

    t_anchor = anchor(workdir)
    print(f"anchor: bare ansible-runner run, one task: {t_anchor:.2f}s (best of 3)")
    print(f"operator --batch-size: {'default' if batch_size is None else batch_size}")
    ns = "bench"
    with Cluster(workdir / "cluster") as cluster:
        from ansible_collections.multigres.pools.plugins.module_utils.kube import connect

        kube = connect(str(cluster.kubeconfig))
        install_crd(kube)
        ensure_namespace(kube, ns)
        topo = f"{cluster.topo_etcd.host}:{cluster.topo_etcd.port}"
        names = [f"s{i:03d}" for i in range(shards)]

        # Converge N shards with one operator, then measure a spec change on one of them.
        op, port = start_operator(cluster.kubeconfig, ns, workdir, "a", batch_size)
        try:
            wait_for(lambda: http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 60, "operator ready")
            for name in names:
                kube.apply(shard_doc(ns, name, topo, 1), "bench")

            def all_observed() -> bool:
                items = kube.request("list", "GET", f"/apis/{keys.API_GROUP_VERSION}/namespaces/{ns}/"
                                     f"{keys.SHARD_PLURAL}")["items"]
                return len(items) == len(names) and all(
                    (i.get("status") or {}).get("observedGeneration") == i["metadata"]["generation"] for i in items)

            wait_for(all_observed, 60 + 10 * len(names), f"{len(names)} shards to converge", interval=1)
            time.sleep(2)  # let the follow-up passes triggered by our own writes finish

            target = names[0]
            start = time.monotonic()
            applied = kube.apply(shard_doc(ns, target, topo, 2), "bench")
            generation = applied["metadata"]["generation"]
            selector = f"{keys.LABEL_CLUSTER}={target}"
            wait_for(lambda: len(kube.list("v1", "Pod", ns, selector)) >= 2, 60, "the new pod", interval=0.02)
            t_first_write = time.monotonic() - start
            wait_for(lambda: ((kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, target) or {})
                              .get("status") or {}).get("observedGeneration") == generation,
                     60, "status of the new generation", interval=0.02)
            t_status = time.monotonic() - start
        finally:
            op.stop()

        # A fresh operator: its start is a resync of N converged shards.
        op, port = start_operator(cluster.kubeconfig, ns, workdir, "b", batch_size)
        peak_rss = peak_children = 0
        start = time.monotonic()
        try:
            while reconcile_count(port) < len(names):
                if time.monotonic() - start > 600:
                    raise TimeoutError("resync did not finish in 600s")
                assert op.pid is not None
                peak_rss = max(peak_rss, rss(op.pid))
                peak_children = max(peak_children, sum(rss(c) for c in children(op.pid)))
                time.sleep(0.05)
            t_resync = time.monotonic() - start
            peak_rss = max(peak_rss, rss(op.pid or 0))
        finally:
            op.stop()
        kube.close()

    def line(what: str, value: float, goal: float, unit: str = "s") -> str:
        verdict = "ok" if value < goal else "OVER GOAL"
        ratio = f"{value / t_anchor:5.1f}x anchor" if unit == "s" else ""
        return f"{what:<48} {value:8.2f}{unit:<4} goal <{goal:g}{unit:<4} {verdict:<9} {ratio}"

    print(line("spec change -> first write", t_first_write, 2.0))
    print(line("spec change -> status of the new generation", t_status, 10.0))
    print(line(f"no-op resync of {len(names)} shards (fresh operator)", t_resync, 30.0))
    print(f"{'  per shard':<48} {t_resync / len(names):8.2f}s   ({t_resync / len(names) / t_anchor:.1f}x anchor)")
    print(line("operator RSS, peak during the resync", peak_rss / MIB, 300, " MiB"))
    print(f"{'ansible-playbook children RSS, peak sum':<48} {peak_children / MIB:8.1f} MiB (not part of the goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
