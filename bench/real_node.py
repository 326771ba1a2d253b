"""The real node beside the process kubelet, measured in one run: a 3-replica shard from applied to
serving, and the longest stretch without an acknowledged write through the multigateway while a
rolling update replaces every pod (replicas first, the primary last).

    python -m bench.real_node

The process kubelet is the anchor: the same stack, shard and load, with pods as processes instead of
containers. "Serving" is one PostgreSQL not in recovery streaming synchronously to both standbys.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.context import print_context
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.writeload import WriteLoad
from tests.integration.multigres.safety import SHARD, apply, converge


@dataclass
class Figures:
    start_s: float      # the stack (cluster, node, operator and agent) up
    serving_s: float    # MultigresShard applied -> serving
    roll_s: float       # the rolling update, applied -> converged
    longest_gap_s: float
    acked: int
    lost: int


def measure(node: str, workdir: Path) -> Figures:
    stack = MultigresStack(workdir, node=node, progress=lambda line: None)
    started = time.monotonic()
    try:
        stack.start()
        up = time.monotonic()
        stack.apply_shard(stack.sample_shard(replicas=3))
        stack.wait_serving(SHARD, replicas=3, timeout=900)
        serving = time.monotonic()
        wait_for(stack.gateway_ip, 300, "a Ready multigateway", interval=1)
        load = WriteLoad(find_primary=stack.gateway_ip, interval=0.01, dsn=stack.gateway_dsn(SHARD))
        load.start()
        load.wait_for_acks(50, timeout=120)
        rolled = time.monotonic()
        converge(stack, apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug")),
                 replicas=3)
        done = time.monotonic()
        load.wait_for_acks(50, timeout=180)
        load.stop()
        return Figures(up - started, serving - up, done - rolled, load.longest_outage().seconds, len(load.acked),
                       len(load.missing()))
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    print_context()
    figures = {}
    for node in ("process", "real"):
        workdir = Path(tempfile.mkdtemp(prefix=f"bench-{node}-"))
        try:
            figures[node] = measure(node, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        f = figures[node]
        print(f"{node:>8} node: stack up {f.start_s:6.1f}s  applied->serving {f.serving_s:6.1f}s  "
              f"rolling update {f.roll_s:6.1f}s  longest write gap {f.longest_gap_s:5.1f}s  "
              f"({f.acked} writes acknowledged, {f.lost} lost)", flush=True)
    real, anchor = figures["real"], figures["process"]
    print(f"ratios real/process: applied->serving {real.serving_s / anchor.serving_s:.2f}x, rolling update "
          f"{real.roll_s / anchor.roll_s:.2f}x, longest write gap {real.longest_gap_s / anchor.longest_gap_s:.2f}x",
          flush=True)
    return 0 if real.lost == anchor.lost == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
