"""Benchmark: one drain from `requested` to `ready-for-deletion`, with local multipooler peers.

    .venv/bin/python -m bench.drain [--runs 7]

Starts the test harness (real kube-apiserver + etcd; or uses KUBECONFIG/TOPO_ETCD with
USE_EXISTING_CLUSTER=1), builds a 3-pod shard with test peers, and times the agent driving one
standby's drain to completion: 3 pod patches, 1 REMOVE, 1 PrimaryStatus, 1 etcd delete, plus the
reads. Anchors measured in the same run: one etcd put+get round trip, one bare gRPC call, and one
pod annotation patch. Goal: median drain under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable

from bench.context import print_context

GOAL_S = 0.5


def _median(fn: Callable[[], None], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def bench(api, etcd_endpoint: str, runs: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    import grpc
    from kubernetes import client

    from multigres_pools.dataplane.etcd import Etcd
    from multigres_pools.playground.era_a_double import MultipoolerPeer
    from multigres_pools.playground.kubelet import FakeKubelet
    from multigres_pools.proto.gen import multipoolermanagerdata_pb2 as mpd
    from multigres_pools.proto.gen import multipoolermanagerservice_pb2_grpc as mps
    from tests.integration.agent.rig import ShardRig

    core = client.CoreV1Api(api)
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    kubelet = FakeKubelet(api)
    etcd = Etcd(etcd_endpoint)
    key = f"/bench-{uuid.uuid4().hex[:6]}/anchor"
    try:
        etcd_rt = _median(lambda: (etcd.put(key, b"x"), etcd.get(key)), 51)
        with MultipoolerPeer(role="PRIMARY") as peer, grpc.insecure_channel(f"127.0.0.1:{peer.port}") as ch:
            stub = mps.MultiPoolerManagerStub(ch)
            stub.State(mpd.StateRequest())
            grpc_rt = _median(lambda: stub.PrimaryStatus(mpd.PrimaryStatusRequest()), 51)
        core.create_namespaced_config_map(ns, {"metadata": {"name": "anchor"}})
        patch_rt = _median(lambda: core.patch_namespaced_config_map(
            "anchor", ns, {"metadata": {"annotations": {"t": str(time.time())}}}), 21)

        drains = []
        for _ in range(runs):
            rig = ShardRig(api, ns, etcd_endpoint).start()
            kubelet.mark_all_ready(ns)
            agent = rig.agent()
            rig.run(agent)  # warm: connections and role labels, as a running agent has them
            victim = rig.names[2]
            started = time.perf_counter()
            rig.request_drain(victim)
            rig.run(agent, victim)
            drains.append(time.perf_counter() - started)
            assert rig.state(victim) == "ready-for-deletion", rig.state(victim)
            rig.stop()
        etcd.delete(key)
    finally:
        core.delete_namespace(ns)
    return {"drain_s": statistics.median(drains), "etcd_rt_s": etcd_rt, "grpc_rt_s": grpc_rt, "patch_rt_s": patch_rt}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    if os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true", "yes"}:
        from multigres_pools.agent.__main__ import api_client

        result = bench(api_client(os.environ.get("KUBECONFIG")), os.environ["TOPO_ETCD"], args.runs)
    else:
        from multigres_pools.playground.cluster import Cluster

        with Cluster() as cluster:
            result = bench(cluster.api_client(), cluster.topo_etcd.endpoint, args.runs)
    print_context()
    d = result["drain_s"]
    print(f"drain requested -> ready-for-deletion: median {d * 1000:.1f} ms over {args.runs} runs "
          f"(goal < {GOAL_S * 1000:.0f} ms: {'met' if d < GOAL_S else 'NOT met'})")
    print(f"  anchor etcd put+get round trip:  {result['etcd_rt_s'] * 1000:.2f} ms  -> drain = "
          f"{d / result['etcd_rt_s']:.1f}x")
    print(f"  anchor bare gRPC call:           {result['grpc_rt_s'] * 1000:.2f} ms  -> drain = "
          f"{d / result['grpc_rt_s']:.1f}x")
    print(f"  anchor pod-style metadata patch: {result['patch_rt_s'] * 1000:.2f} ms  -> drain = "
          f"{d / result['patch_rt_s']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
