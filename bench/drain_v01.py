"""Drains on real Multigres v0.1.0, end to end: from the engine asking for a drain (`requested`) to
the pod being deleted, on the whole local stack (operator, agent, multiorch, PostgreSQL 17), under
a steady SQL write load. A shard of N replicas is scaled down to 2 (its AT_LEAST_2 floor), so the
engine drains N - 2 standbys one after another.

    python -m bench.drain_v01 [--replicas 7]

Each drain is split where the two programs hand over: the agent's part (`requested` ->
`ready-for-deletion`: StopReplication, the CAS REMOVE, the proofs, the record) and the engine's
(`ready-for-deletion` -> the pod's deletion). The anchor is the matching Go operator's documented
cadence (multigres-operator v0.11.0: one drain step per reconcile, a requeue of 2 s between steps,
three steps before its delete), a figure from its constants, not a run: its image cannot run here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from bench.context import print_context
from multigres_pools.playground.localstack import PodTimeline, wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.writeload import WriteLoad

GO_REQUEUE_S = 2.0
GO_STEPS = 3  # requested -> draining -> acknowledged -> ready-for-deletion, one per reconcile
FLOOR = 2  # AT_LEAST_2: the cohort keeps the primary and one standby


def _first(timeline: PodTimeline, uid: str, test) -> float | None:  # type: ignore[no-untyped-def]
    return next((e.at for e in timeline.of(uid) if test(e)), None)


def run(replicas: int) -> list[tuple[float, float]]:
    """(agent seconds, engine seconds) of each drain of a scale from `replicas` down to the floor."""
    stack = MultigresStack(Path(tempfile.mkdtemp(prefix="mgp-bench-drain-")), progress=lambda _line: None).start()
    timeline = load = None
    try:
        stack.apply_shard(stack.sample_shard(replicas=replicas))
        stack.wait_serving("play", replicas=replicas, timeout=900)
        timeline = PodTimeline(stack.kubeconfig, stack.namespace)
        load = WriteLoad(find_primary=stack.primary_ip, dsn=stack.dsn)
        timeline.start()
        load.start()
        load.wait_for_acks(50, timeout=120)
        before = {facts.uid(p) for p in stack.pods()}
        doc = stack.sample_shard(replicas=FLOOR)
        stack.apply_shard(doc)
        wait_for(lambda: len([p for p in stack.pods() if facts.uid(p) in before]) == FLOOR, 1800,
                 f"the scale-down to {FLOOR}", interval=1)
        stack.wait_serving("play", replicas=FLOOR, timeout=600)
        load.wait_for_acks(20, timeout=120)
        lost = load.missing()
        if lost:
            raise SystemExit(f"acknowledged writes missing after the drains: {lost[:10]}")
        out = []
        for uid in before:
            requested = _first(timeline, uid, lambda e: e.drain == keys.DrainState.REQUESTED)
            ready = _first(timeline, uid, lambda e: e.drain == keys.DrainState.READY_FOR_DELETION)
            deleted = _first(timeline, uid, lambda e: e.deleting or e.type == "DELETED")
            if requested is not None and ready is not None and deleted is not None:
                out.append((ready - requested, deleted - ready))
        return out
    finally:
        for thread in (load, timeline):
            if thread is not None:
                thread.stop()
        stack.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicas", type=int, default=7, help="start size; N - 2 drains are timed (default 7)")
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench.drain_v01: run as root (pods get network namespaces)")
    started = time.monotonic()
    drains = run(args.replicas)
    if not drains:
        raise SystemExit("no complete drain was observed")
    agent = statistics.median(a for a, _ in drains)
    engine = statistics.median(e for _, e in drains)
    total = statistics.median(a + e for a, e in drains)
    go = GO_REQUEUE_S * GO_STEPS
    print_context()
    print(f"{len(drains)} drains on Multigres v0.1.0 ({args.replicas} -> {FLOOR} replicas, write load on; "
          f"whole run {time.monotonic() - started:.0f} s)")
    print(f"{'median':40}{'seconds':>10}")
    print(f"{'requested -> ready-for-deletion (agent)':40}{agent:10.2f}")
    print(f"{'ready-for-deletion -> pod deleted (engine)':40}{engine:10.2f}")
    print(f"{'requested -> pod deleted':40}{total:10.2f}")
    print(f"{'anchor: Go operator v0.11.0 cadence':40}{go:10.2f}   ({GO_STEPS} steps x {GO_REQUEUE_S:g} s requeue, "
          "documented, not run)")
    print(f"ratio requested -> pod deleted / anchor: {total / go:.2f}")
    print("each drain (agent s, engine s):", ", ".join(f"({a:.2f}, {e:.2f})" for a, e in drains))


if __name__ == "__main__":
    main()
