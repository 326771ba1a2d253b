"""Render benchmark: 100 shards of 3 cells x 2 pools x 3 replicas, validated and fully expanded.

Prints the render time, objects per second, and the ratio against an anchor measured in the same
run on the same objects: serialising them once with json.dumps (a floor any renderer must pay to
produce the bytes). Goal: the render stays under 2 s on the project's 2-core machines.

    .venv/bin/python -m bench.render [--shards 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import time

from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from bench.context import print_context


def shard_spec(i: int) -> dict:
    cells = ["zone-a", "zone-b", "zone-c"]
    return {
        "clusterName": f"bench-{i:03d}",
        "globalTopoServer": {"address": "etcd-0.etcd:2379"},
        "cellTopologyLabels": {c: {"topology.kubernetes.io/zone": c} for c in cells},
        "pools": {
            "primary": {"cells": cells, "replicasPerCell": 3, "storage": {"size": "100Gi"}},
            "reporting": {"cells": cells, "replicasPerCell": 3, "storage": {"size": "50Gi"}},
        },
        "postgresConfig": {"max_connections": "400"},
    }


def render_all(specs: list[dict]) -> list[dict]:
    objects: list[dict] = []
    for i, spec in enumerate(specs):
        desired = render.desired_state(model.load_spec(spec), f"ns-{i:03d}")
        objects += render.manifests(desired)
    return objects


def best_of(repeat: int, fn):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    specs = [shard_spec(i) for i in range(args.shards)]
    render_s, objects = best_of(args.repeat, lambda: render_all(specs))
    anchor_s, _ = best_of(args.repeat, lambda: [json.dumps(o, sort_keys=True) for o in objects])
    print_context()
    pods = sum(1 for o in objects if o["kind"] == "Pod")
    print(f"shards: {args.shards} (3 cells x 2 pools x 3 replicas) -> {len(objects)} objects, {pods} pods")
    print(f"render: {render_s:.3f} s  ({len(objects) / render_s:,.0f} objects/s)  goal < 2 s: "
          f"{'ok' if render_s < 2 else 'MISSED'}")
    print(f"anchor (json.dumps of the same objects): {anchor_s:.3f} s")
    print(f"ratio render/anchor: {render_s / anchor_s:.1f}x")


if __name__ == "__main__":
    main()
