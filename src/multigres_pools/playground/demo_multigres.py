"""`make demo`: the pool story on real Multigres v0.1.0 and PostgreSQL 17, on this machine.

It starts the whole stack (multigres_stack.py), then: create a shard of 3 replicas and show the real
primary's synchronous_standby_names and pg_stat_replication; write rows through SQL and keep a
steady write load running through the multigateway; scale up to 5; roll every pod by changing a
flag (replicas first, the primary last); scale back down to 3 (each removed pod drained out of
synchronous replication first); check that every acknowledged write is still there; delete the
shard; stop everything.

Progress is one line per change, readable in a log or CI (no redrawn screen).
Run: `make demo` (or `python -m multigres_pools.playground.demo_multigres --workdir DIR` to keep the
logs of every component in DIR; a temporary work directory is removed after a passing run).

The pods run on the real node (containers on a real kubelet, the operator and agent installed from
the bundle) when this machine can run one, else on the process kubelet; the first line says which
and why (`--node real|process` chooses).
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import psycopg
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from .localstack import PodEvent, PodTimeline, wait_for
from .multigres_stack import Member, MultigresStack
from .realnode.preflight import NODES, choose
from .writeload import WriteLoad

SHARD = "play"


class Narrator:
    """Prints what changed, one line each, with the time since the demo started."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.t0 = out, time.monotonic()
        self._last: dict[str, tuple[Any, ...]] = {}

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {text}", file=self.out, flush=True)

    def pod(self, event: PodEvent) -> None:
        short = event.name.rsplit("-", 2)[-2:]
        name = "-".join(short)
        if event.type == "DELETED":
            self._last.pop(event.uid, None)
            self.say(f"pod {name}: gone")
            return
        state = (event.role, event.drain, event.ready, event.deleting)
        if self._last.get(event.uid) == state:
            return
        before = self._last.get(event.uid)
        self._last[event.uid] = state
        words = ["created" if before is None else "now"]
        words.append(f"role={event.role or '-'}")
        words.append("ready" if event.ready else "not ready")
        if event.drain:
            words.append(f"drain={event.drain}")
        if event.deleting:
            words.append("terminating")
        self.say(f"pod {name}: {' '.join(words)}")


def show_replication(say: Callable[[str], None], primary: Member) -> None:
    say(f"primary {primary.pod} ({primary.ip}): synchronous_standby_names = {primary.synchronous_standby_names}")
    for name, state in primary.replicas:
        say(f"  pg_stat_replication: {name} sync_state={state}")


def _with(doc: Manifest, change: Callable[[Manifest], None]) -> Manifest:
    out = copy.deepcopy(doc)
    change(out["spec"])
    return out


def _replicas(n: int) -> Callable[[Manifest], None]:
    def change(spec: Manifest) -> None:
        for pool in spec["pools"].values():
            pool["replicasPerCell"] = n
    return change


def _log_level(level: str) -> Callable[[Manifest], None]:
    def change(spec: Manifest) -> None:
        spec.setdefault("logLevels", {})["multipooler"] = level
    return change


def _converged(stack: MultigresStack, generation: int) -> bool:
    kube = stack.kube()
    try:
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD)
    finally:
        kube.close()
    status = (cr or {}).get("status") or {}
    return status.get("observedGeneration") == generation and facts.condition_true(cr or {}, "Ready")


def step(stack: MultigresStack, say: Callable[[str], None], title: str, doc: Manifest, replicas: int) -> Member:
    say(f"== {title}")
    started = time.monotonic()
    applied = stack.apply_shard(doc)
    generation = int(applied["metadata"]["generation"])
    wait_for(lambda: _converged(stack, generation), 900, f"the operator to converge ({title})", interval=1)
    primary = stack.wait_serving(SHARD, replicas=replicas, timeout=600, progress=lambda line: say(f"   {line}"))
    say(f"== done in {time.monotonic() - started:.0f}s: {title}")
    return primary


def run(stack: MultigresStack, out: TextIO) -> bool:
    narrator = Narrator(out)
    say = narrator.say
    timeline = PodTimeline(stack.kubeconfig, stack.namespace)
    timeline.listeners.append(narrator.pod)
    timeline.start()
    load: WriteLoad | None = None
    try:
        doc = stack.sample_shard(replicas=3, name=SHARD)
        primary = step(stack, say, "create the shard: 3 replicas", doc, 3)
        show_replication(say, primary)

        with psycopg.connect(stack.dsn(primary.ip), autocommit=True) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS demo_rows (id int PRIMARY KEY, note text)")
            conn.execute("INSERT INTO demo_rows SELECT g, 'row ' || g FROM generate_series(1, 100) g "
                         "ON CONFLICT DO NOTHING")
        say("wrote 100 rows into demo_rows through SQL; starting a steady write load through the multigateway")
        # A client's path: the gateway routes to whichever pooler is the primary, so the stretch without
        # an acknowledged write is what an application sees during the primary's replacement.
        load = WriteLoad(find_primary=stack.gateway_ip, dsn=stack.gateway_dsn(SHARD))
        load.start()
        load.wait_for_acks(20, timeout=300)

        doc = _with(doc, _replicas(5))
        show_replication(say, step(stack, say, "scale up: 3 -> 5", doc, 5))
        doc = _with(doc, _log_level("debug"))
        show_replication(say, step(stack, say, "rolling update: multipooler --log-level=debug", doc, 5))
        doc = _with(doc, _replicas(3))
        show_replication(say, step(stack, say, "scale down: 5 -> 3 (drains)", doc, 3))

        load.wait_for_acks(20, timeout=120)
        load.stop()
        missing = load.missing()
        outage = load.longest_outage()
        primary_ip = stack.primary_ip()
        assert primary_ip is not None
        with psycopg.connect(stack.dsn(primary_ip)) as conn:
            (rows,) = conn.execute("SELECT count(*) FROM demo_rows").fetchone() or (0,)
        say(f"demo_rows: {rows} of 100 rows present")
        say(f"write load: {len(load.acked)} writes acknowledged, {len(missing)} missing; "
            f"longest stretch without an acknowledged write {outage.seconds:.1f}s")
        ok = rows == 100 and not missing
        say("OK: nothing was lost" if ok else f"FAILED: missing rows {missing[:20]}")

        say("== delete the shard")
        kube = stack.kube()
        try:
            kube.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD)
        finally:
            kube.close()
        wait_for(lambda: not stack.pods(), 300, "every pool pod to go", interval=1)
        say("== done: the shard is gone")
        return ok
    finally:
        if load is not None and load.is_alive():
            load.stop()
        timeline.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="multigres-pools-demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", type=Path, help="where the stack lives (default: a temporary directory)")
    p.add_argument("--node", choices=("auto", *NODES), default="auto",
                   help="who runs the pods (default %(default)s: the real node when this machine can run one)")
    args = p.parse_args(argv)
    node, why = choose(args.node)
    print(f"demo: pods run on the {node} {'node' if node == 'real' else 'kubelet'} ({why})", flush=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mgp-demo-"))
    stack = MultigresStack(workdir, namespace="demo", progress=lambda s: print(s, flush=True), node=node)
    started, ok = time.monotonic(), False
    try:
        stack.start()
        ok = run(stack, sys.stdout)
    finally:
        stack.stop()
    print(f"demo {'passed' if ok else 'FAILED'} in {time.monotonic() - started:.0f}s; everything stopped", flush=True)
    if ok and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)  # hundreds of MB of data directories and logs
    elif not ok:
        print(f"logs of every component: {workdir}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
