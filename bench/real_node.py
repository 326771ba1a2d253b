"""The real node beside the process kubelet, measured in one run: a 3-replica shard from applied to
serving, and a rolling update that replaces every pod (replicas first, the primary last) under a
steady write load through the multigateway: how long each pod's replacement takes, the roll as a
whole, and the longest stretch without an acknowledged write.

    python -m bench.real_node

The process kubelet is the anchor: the same stack, shard and load, with pods as processes instead of
containers (no kubelet listing, no sandbox, no image). "Serving" is one PostgreSQL not in recovery
streaming synchronously to both standbys. A pod's replacement is issue 24's figure: from its drain
request to its successor (the same name) Ready and labelled REPLICA; the primary's replacement
includes its handover. The phases' p50 (drain -> ready-for-deletion -> gone -> recreated -> Ready)
say where the seconds go on each node.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.context import print_context, scratch
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from tests.integration.multigres.safety import (
    SHARD,
    Watched,
    apply,
    converge,
    replacement_phases,
    roll_seconds,
    uids,
)

GOAL_REPLACEMENT_S = 10.0  # issue 24: a pod's replacement in a rolling update, p50
PHASES = ("ready-for-deletion", "gone", "recreated", "REPLICA+Ready")


@dataclass
class Figures:
    start_s: float      # the stack (cluster, node, operator and agent) up
    serving_s: float    # MultigresShard applied -> serving
    roll_s: float       # the rolling update, applied -> converged
    first_to_last_s: float | None  # first drain request -> the last successor Ready
    each: dict[str, dict[str, float | None]]  # pod name -> its replacement's phases (replacement_phases)
    waits: dict[str, list[str]]  # pod name -> what its drain was held for (the blocked-reason annotation)
    primary_pod: str  # the primary before the roll: its replacement includes the handover
    longest_gap_s: float
    acked: int
    lost: int

    @property
    def standbys(self) -> list[dict[str, float | None]]:
        return [phases for name, phases in self.each.items() if name != self.primary_pod]

    @property
    def primary(self) -> dict[str, float | None]:
        return self.each.get(self.primary_pod, {})


def measure(node: str, workdir: Path) -> Figures:
    stack = MultigresStack(workdir, node=node, progress=lambda line: None)
    watched: Watched | None = None
    started = time.monotonic()
    try:
        stack.start()
        up = time.monotonic()
        stack.apply_shard(stack.sample_shard(replicas=3))
        stack.wait_serving(SHARD, replicas=3, timeout=900)
        serving = time.monotonic()
        wait_for(stack.gateway_ip, 300, "a Ready multigateway", interval=1)
        watched = Watched(stack, through_gateway=True)
        watched.start()
        before, primary = uids(stack), stack.primary()
        assert primary is not None, "a serving shard has a primary"
        rolled = time.monotonic()
        converge(stack, apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug")),
                 replicas=3)
        done = time.monotonic()
        watched.load.wait_for_acks(50, timeout=180)
        watched.load.stop()
        waits = {name: watched.timeline.drain_blocks(uid) for uid, name in before.items()}
        return Figures(up - started, serving - up, done - rolled, roll_seconds(watched, before),
                       replacement_phases(watched, before), waits, primary.pod,
                       watched.load.longest_outage().seconds, len(watched.load.acked), len(watched.load.missing()))
    finally:
        if watched is not None:
            watched.stop()
        stack.stop()


def p50(runs: list[dict[str, float | None]], phase: str) -> float | None:
    seen = [v for r in runs if (v := r.get(phase)) is not None]
    return round(statistics.median(seen), 1) if seen else None


def seconds(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:5.1f}s"


def report(node: str, f: Figures) -> None:
    print(f"{node:>8} node: stack up {f.start_s:6.1f}s  applied->serving {f.serving_s:6.1f}s  "
          f"rolling update {f.roll_s:6.1f}s (first drain request -> last successor Ready "
          f"{seconds(f.first_to_last_s)})  longest write gap {f.longest_gap_s:5.1f}s  "
          f"({f.acked} writes acknowledged, {f.lost} lost)", flush=True)
    for label, runs in (("standbys' replacements", f.standbys), ("the primary's replacement", [f.primary]),
                        ("every replacement", list(f.each.values()))):
        line = "  ".join(f"{phase} {seconds(p50(runs, phase))}" for phase in PHASES)
        print(f"{'':>10}{label} (p50 of {len(runs)}, seconds after the drain request): {line}", flush=True)
    for name, held in f.waits.items():
        steps = "  ".join(f"{k} {seconds(v)}" for k, v in f.each.get(name, {}).items())
        print(f"{'':>10}{name}: {steps}; its drain held for: {', '.join(held) or 'nothing'}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="process,real",
                        help="which nodes, in order (default process,real); the ratios need both")
    nodes = [n for n in parser.parse_args(argv).nodes.split(",") if n]
    if unknown := sorted(set(nodes) - {"process", "real"}):
        parser.error(f"--nodes: unknown node {', '.join(unknown)} (known: process, real)")
    print_context()
    figures = {}
    for node in nodes:
        with scratch(f"mgp-bench-{node}-node-") as workdir:
            figures[node] = measure(node, workdir)
        report(node, figures[node])
    if len(figures) < 2:
        return 0 if all(f.lost == 0 for f in figures.values()) else 1
    real, anchor = figures["real"], figures["process"]
    ours, theirs = (p50(list(f.each.values()), "REPLICA+Ready") for f in (real, anchor))
    replacement = (f"{ours / theirs:.2f}x (real {ours:.1f}s, process {theirs:.1f}s; goal p50 <= "
                   f"{GOAL_REPLACEMENT_S:.0f}s)" if ours and theirs else "n/a")
    print(f"ratios real/process: applied->serving {real.serving_s / anchor.serving_s:.2f}x, rolling update "
          f"{real.roll_s / anchor.roll_s:.2f}x, a pod's replacement (p50) {replacement}, longest write gap "
          f"{real.longest_gap_s / anchor.longest_gap_s:.2f}x", flush=True)
    return 0 if real.lost == anchor.lost == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
