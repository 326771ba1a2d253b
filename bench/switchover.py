"""The primary's replacement as a client of the gateway feels it, on real Multigres v0.1.0 (issue #24).

    python -m bench.switchover [--rounds 10] [--clients 1] [--failover-buffer] [--drain-grace 1s] [--keep]
                               [--pre-stop-delay 6s] [--anchor grace|no-pre-stop-delay] [--spacing S]

One shard of 3 pods under a steady write load through the multigateway (a client's path); every
pool pod's PostgreSQL is asked `pg_is_in_recovery()` at 5 Hz. Each round deletes the primary's pod
(what a rolling update, a decommission or `kubectl delete pod` ends with) and waits until another
pod is the confirmed primary and all 3 serve again. Reported per path: the longest stretch without
an acknowledged write around each replacement (p50, max), the client errors seen, and the samples
in which two servers were out of recovery.

With `--failover-buffer` the shard's multigateway holds statements the old primary refuses during
the change (spec.multigateway.failoverBuffer) and the rounds start at least 65 s apart: v0.1.0's
gateway buffers at most one failover a minute (--buffer-min-time-between-failovers). Compare its
figures with a run without it on the same machine. `--recovery-cycle-interval` sets multiorch's
(the playground shard's 500ms otherwise): the election starts at the first recovery cycle after the
agent's TriggerRecoveryNow, so half an interval is waited on average. `--drain-grace` sets the pool's
multipooler.connectionDrainGracePeriod (the spec's default otherwise): the old primary's drain is the
first step of every handover, so a run with the old default (1s) beside one with today's shows what it
costs. It waits only while a transaction is open at the old primary's SIGTERM, which one client's short
transactions over the loopback seldom are: `--clients N` runs N write loads at once (each its own
connection and table), and a gap is then a stretch in which none of them had a write acknowledged.

The anchor, measured in the same run on the same shard: the agent restarted with
`--no-hurry-handover`, so the new primary waits for multiorch's own failover grace (today's path
before the agent asked multiorch to act at once). `--anchor no-pre-stop-delay` instead re-applies the
shard with the pool's multipooler.preStopDelay at 0s (its pods rolled to it first) and runs the same
handover: the pod then stops while DNS caches may still give out its address, and the gateway and
multiorch can dial the old address of the pooler that a later round promotes (`--pre-stop-delay` sets
the first path's; the spec's default otherwise). A round's timing decides whether that bites (gRPC
looks a name up again no sooner than 30 s after the last answer), so `--spacing S` starts the rounds
of both paths S seconds apart.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import pool_v0_1
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from bench.context import print_context, scratch
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.writeload import TABLE, RecoverySampler, WriteLoad

REPLICAS = 3
BUFFER_SPACING_S = 65.0  # v0.1.0's --buffer-min-time-between-failovers is 1 min


@dataclass
class Round:
    gap_s: float
    errors: Counter[str]
    two_writable: int


def _primary_pod(stack: MultigresStack) -> tuple[str, str] | None:
    """(name, uid) of the one pod labelled PRIMARY. By uid: the old primary's recreated pod (same
    name) may well be elected again."""
    labelled = [(facts.name(p), facts.uid(p) or "") for p in stack.pods()
                if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY
                and not facts.meta(p).get("deletionTimestamp")]
    return labelled[0] if len(labelled) == 1 else None


def _longest_gap(ack_times: list[float], start: float, end: float) -> float:
    """The longest stretch between two acknowledged writes that overlaps [start, end]."""
    gaps = [b - a for a, b in itertools.pairwise(ack_times) if b >= start and a <= end]
    return max(gaps, default=end - start)


class Clients:
    """Several write loads at once, each on a table of its own, read as one: the acknowledgements of all
    of them, so a gap is a stretch in which no client had a write acknowledged. One client's
    transactions are rarely open at the instant of the primary's SIGTERM; many clients' always are."""

    def __init__(self, count: int, make: Callable[[str], WriteLoad]) -> None:
        self.loads = [make(TABLE if i == 0 else f"{TABLE}_{i}") for i in range(count)]

    @property
    def errors(self) -> Counter[str]:
        return sum((load.errors for load in self.loads), Counter())

    @property
    def ack_times(self) -> list[float]:
        return sorted(t for load in self.loads for t in load.ack_times)

    @property
    def error_texts(self) -> set[str]:
        return set().union(*(load.error_texts for load in self.loads))

    def start(self) -> None:
        for load in self.loads:
            load.start()

    def stop(self) -> None:
        for load in self.loads:
            load.stop()

    def wait_for_acks(self, count: int, timeout: float) -> None:
        for load in self.loads:
            load.wait_for_acks(count, timeout)

    def missing(self, host: str) -> list[int]:
        return [ident for load in self.loads for ident in load.missing(host)]


def one_round(stack: MultigresStack, load: Clients, recovery: RecoverySampler) -> Round:
    old = wait_for(lambda: _primary_pod(stack), 300, "a pod labelled PRIMARY", interval=0.5)
    errors_before, samples_before = Counter(load.errors), len(recovery.samples)
    started = time.monotonic()
    kube = stack.kube()
    try:
        kube.delete("v1", "Pod", stack.namespace, old[0], uid=old[1])
    finally:
        kube.close()
    wait_for(lambda: (p := _primary_pod(stack)) is not None and p[1] != old[1], 300, "another primary", interval=0.2)
    stack.wait_serving("play", replicas=REPLICAS, timeout=600)
    load.wait_for_acks(20, timeout=120)
    ended = time.monotonic()
    both = [s for s in recovery.samples[samples_before:] if len(s.writable) > 1]
    return Round(_longest_gap(list(load.ack_times), started, ended), load.errors - errors_before, len(both))


def _rolled_to(stack: MultigresStack, delay_s: Decimal) -> bool:
    """Every pool pod runs multipooler with the preStop hook of `delay_s` and none is terminating."""
    pods = stack.pods()
    want = ["/bin/sh", "-c", pool_v0_1.pre_stop_script(delay_s)]
    return len(pods) == REPLICAS and all(
        not facts.is_terminating(pod)
        and next(c for c in pod["spec"]["containers"] if c["name"] == "multipooler")["lifecycle"]["preStop"]["exec"][
            "command"] == want
        for pod in pods)


def run_path(stack: MultigresStack, load: Clients, recovery: RecoverySampler, rounds: int,
             label: str, spacing_s: float = 0.0) -> list[Round]:
    out = []
    for i in range(rounds):
        began, wall = time.monotonic(), datetime.now(UTC).strftime("%H:%M:%S")
        out.append(one_round(stack, load, recovery))
        time.sleep(max(0.0, spacing_s - (time.monotonic() - began)))
        print(f"  {label} round {i + 1}/{rounds} (began {wall} UTC): longest gap {out[-1].gap_s:.2f} s, errors "
              f"{dict(out[-1].errors) or 'none'}, two writable: {out[-1].two_writable}", flush=True)
    return out


def _row(label: str, rounds: list[Round]) -> str:
    gaps = [r.gap_s for r in rounds]
    errors = sum((r.errors for r in rounds), Counter())
    return (f"{label:34}{statistics.median(gaps):8.2f}{max(gaps):8.2f}{sum(r.two_writable for r in rounds):8d}   "
            f"{dict(errors) or 'none'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10, help="primary replacements per path (default 10)")
    p.add_argument("--failover-buffer", action="store_true",
                   help="enable the multigateway's failover buffer; rounds start 65 s apart")
    p.add_argument("--clients", type=int, default=1, metavar="N",
                   help="write loads at once, each with its own connection and table (default 1)")
    p.add_argument("--drain-grace", metavar="DURATION",
                   help="the pool's multipooler.connectionDrainGracePeriod (default: the spec's own default)")
    p.add_argument("--recovery-cycle-interval", metavar="DURATION",
                   help="the shard's multiorch.recoveryCycleInterval (default: the playground shard's, 500ms)")
    p.add_argument("--pre-stop-delay", metavar="DURATION",
                   help="the pool's multipooler.preStopDelay (default: the spec's own default)")
    p.add_argument("--anchor", choices=("grace", "no-pre-stop-delay"), default="grace",
                   help="the second path: multiorch's own grace (default), or the same handover with preStopDelay 0s")
    p.add_argument("--spacing", type=float, metavar="S",
                   help="start the rounds S seconds apart (default: back to back; 65 with --failover-buffer)")
    p.add_argument("--keep", action="store_true",
                   help="keep the working directory (every pod's log) after a run that ends well, to read a slow "
                        "round against the UTC start each round prints")
    args = p.parse_args()
    spacing_s = args.spacing
    if spacing_s is None:
        spacing_s = BUFFER_SPACING_S if args.failover_buffer else 0.0
    if os.geteuid() != 0:
        raise SystemExit("bench.switchover: run as root (pods get network namespaces)")
    started = time.monotonic()
    with scratch("mgp-bench-switchover-", keep=args.keep) as workdir:
        stack = MultigresStack(workdir, progress=lambda _line: None)
        load = recovery = None
        try:
            stack.start()
            shard = stack.sample_shard(replicas=REPLICAS)
            if args.failover_buffer:
                shard["spec"]["multigateway"]["failoverBuffer"] = {"enabled": True}
            pooler = shard["spec"]["pools"]["default"].setdefault("multipooler", {})
            if args.drain_grace:
                pooler["connectionDrainGracePeriod"] = args.drain_grace
            if args.recovery_cycle_interval:
                shard["spec"]["multiorch"]["recoveryCycleInterval"] = args.recovery_cycle_interval
            if args.pre_stop_delay:
                pooler["preStopDelay"] = args.pre_stop_delay
            stack.apply_shard(shard)
            stack.wait_serving("play", replicas=REPLICAS, timeout=900)
            gateway = wait_for(stack.gateway_ip, 300, "a Ready multigateway", interval=1)
            password = stack.password("play")
            load = Clients(args.clients, lambda table: WriteLoad(
                find_primary=lambda: gateway, interval=0.01, table=table,
                dsn=stack.gateway_dsn("play")))
            recovery = RecoverySampler(
                pods=stack.pool_addresses, dsn=lambda host: stack.dsn(host, password=password))
            load.start()
            recovery.start()
            load.wait_for_acks(50, timeout=120)
            hurried = run_path(stack, load, recovery, args.rounds, "handover", spacing_s)
            if args.anchor == "grace":
                stack.agent_args = (*stack.agent_args, "--no-hurry-handover")
                stack.restart_agent()
            else:
                pooler["preStopDelay"] = "0s"
                stack.apply_shard(shard)
                wait_for(lambda: _rolled_to(stack, Decimal(0)), 900, "the pods rolled to preStopDelay 0s", interval=1)
                stack.wait_serving("play", replicas=REPLICAS, timeout=600)
            anchor = run_path(stack, load, recovery, args.rounds, "anchor", spacing_s)
            lost = load.missing(gateway)
        finally:
            for thread in (load, recovery):
                if thread is not None:
                    thread.stop()
            stack.stop()
    print_context()
    print(f"{args.rounds} primary replacements per path on Multigres v0.1.0, {REPLICAS} pods, writes through the "
          f"gateway from {args.clients} client{'s' if args.clients > 1 else ''}"
          f"{', failover buffer on' if args.failover_buffer else ''}"
          f"{', drain grace ' + args.drain_grace if args.drain_grace else ''}"
          f"{', recovery cycle ' + args.recovery_cycle_interval if args.recovery_cycle_interval else ''}"
          f"{', preStopDelay ' + args.pre_stop_delay if args.pre_stop_delay else ''}"
          f"{f', rounds {spacing_s:.0f} s apart' if spacing_s else ''} (whole run "
          f"{time.monotonic() - started:.0f} s); acknowledged writes lost: {len(lost)}")
    print(f"{'path':34}{'p50 s':>8}{'max s':>8}{'2 prim':>8}   client errors")
    print(_row("agent hurries multiorch (default)", hurried))
    print(_row("anchor: multiorch's own grace" if args.anchor == "grace" else "anchor: preStopDelay 0s", anchor))
    ratio = statistics.median(r.gap_s for r in hurried) / statistics.median(r.gap_s for r in anchor)
    print(f"ratio longest write gap p50, handover / anchor: {ratio:.2f}")
    print("what clients saw (first of each kind):")
    for text in sorted(load.error_texts if load is not None else ()):
        print(f"  {text}")
    if lost:
        raise SystemExit(f"acknowledged writes missing: {lost[:10]}")


if __name__ == "__main__":
    main()
