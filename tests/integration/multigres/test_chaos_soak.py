"""The chaos soak on real Multigres v0.1.0 (`make soak-matrix`): replica churn, rolling updates and drains
while the operator, the agent, the topology etcd and the kube-apiserver are SIGKILLed and restarted
at random, under a steady SQL write load through the multigateway.

One MultigresShard with two pools in zone1 (`default`, 2 pods, and `spare`, 1), not two shards:
Multigres v0.1.0 serves one database and one shard (`0-inf`) per topology, and a second shard would
need a second topology root, multiorch and gateway on a machine of two cores; two pools give two
independent sets of pods to churn (scale-down drains, rolls and decommissions in each) under one
primary, whose synchronous set is what each deletion is judged against.

Bounded and reproducible: SOAK_SEED (default below) draws the schedule, SOAK_ROUNDS rounds of one
spec change and two faults, with random pauses; every kind of fault occurs equally often. Each step
is printed with its time. Afterwards the shard converges (Ready at its latest generation, every pod
serving with a synchronous standby set), no pod was deleted while its standby was in the primary's
synchronous_standby_names, every acknowledged write is on the primary, and no two pods were ever
labelled PRIMARY. The figures of a run are in docs/reliability.md ("Chaos soak").
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground.multigres_stack import CRASHABLE, MultigresStack

from .safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    app_names,
    apply,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    converge,
    drained_as_primary,
    note,
    primary_label_overlaps,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, STACK_TIMEOUT]
SEED = int(os.environ.get("SOAK_SEED", "1124"))
ROUNDS = int(os.environ.get("SOAK_ROUNDS", "6"))
FAULTS_PER_ROUND = 2
START = {"default": 2, "spare": 1}  # pods per pool at the start
REPLICAS = {"default": (1, 3), "spare": (1, 2)}  # per pool: the fewest and most pods the churn keeps
PAUSE_S = (4.0, 14.0)  # between steps: long enough for a drain to be under way when the next fault hits
DOWN_S = (1.0, 6.0)  # how long a killed component stays down
# When no synchronous_standby_names sample was taken in the 3 s before a deletion, how long after it
# the first sample may come. The sampler finds the primary through the API server every 0.1 s, but
# here it shares two cores with the whole stack under churn and other test runs (load average 16
# was seen), and a deletion can fall into a failover after the primary's own drain: gaps of 3-7 s.
AFTER_S = 10.0


def chaos_shard(stack: MultigresStack) -> dict[str, Any]:
    doc = stack.sample_shard(replicas=START["default"], name=SHARD)
    pools = doc["spec"]["pools"]
    pools["spare"] = {**copy.deepcopy(pools["default"]), "replicasPerCell": START["spare"]}
    return doc


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("chaos"), chaos_shard, sum(START.values()), through_gateway=True) as w:
        yield w


@dataclass
class Step:
    at: float  # seconds since the soak started
    kind: str  # "change" or "fault"
    what: str
    detail: str


class Chaos:
    """The schedule, drawn from one seed, and the record of what it did."""

    def __init__(self, watched: Watched, seed: int) -> None:
        self.watched, self.stack, self.rng = watched, watched.stack, random.Random(seed)
        self.started = time.monotonic()
        self.steps: list[Step] = []
        self.names: dict[str, str] = {}  # uid -> standby name, of every pool pod seen
        self.faults: Counter[str] = Counter()
        self.survived: Counter[str] = Counter()
        self.generation = 0
        self.replicas = dict(START)
        kinds = list(CRASHABLE) * -(-ROUNDS * FAULTS_PER_ROUND // len(CRASHABLE))
        self.rng.shuffle(kinds)
        self.schedule = kinds[:ROUNDS * FAULTS_PER_ROUND]

    def log(self, kind: str, what: str, detail: str) -> None:
        step = Step(round(time.monotonic() - self.started, 1), kind, what, detail)
        self.steps.append(step)
        print(f"[chaos {step.at:7.1f}s] {kind} {what}: {detail}", flush=True)

    def observe(self) -> None:
        """Learn the standby name of every pod that exists now (the API server may be down)."""
        with contextlib.suppress(Exception):
            self.names.update(app_names(self.stack))

    def pause(self) -> None:
        deadline = time.monotonic() + self.rng.uniform(*PAUSE_S)
        while time.monotonic() < deadline:
            self.observe()
            time.sleep(1)

    # --- spec changes ---------------------------------------------------------------------------------
    def change(self, round_no: int) -> None:
        pool = self.rng.choice(sorted(REPLICAS))
        kind = self.rng.choice(("scale", "roll", "decommission"))
        lo, hi = REPLICAS[pool]
        if kind == "scale":
            target = self.rng.choice([n for n in range(lo, hi + 1) if n != self.replicas[pool]])
            self.replicas[pool] = target
            self.generation = apply(self.stack, lambda spec: spec["pools"][pool].update(replicasPerCell=target))
            detail = f"pool {pool} to {target} pods"
        elif kind == "roll":
            # A new CPU request changes the pod template of this pool only: each pod is drained and replaced.
            cpu = f"{10 + round_no}m"
            self.generation = apply(self.stack, lambda spec: spec["pools"][pool].update(
                multipooler={"resources": {"requests": {"cpu": cpu}}}))
            detail = f"pool {pool}: multipooler requests cpu {cpu} (rolls its pods)"
        else:
            victim = self._live_pod(pool)
            self.generation = apply(self.stack, lambda spec: spec["pools"][pool].update(
                decommission=[*spec["pools"][pool].get("decommission", []), victim]))
            detail = f"pool {pool}: decommission {victim} (a new pod first, then its drain)"
        self.log("change", kind, f"{detail}; generation {self.generation}")

    def _live_pod(self, pool: str) -> str:
        live = [facts.name(p) for p in self.stack.pods() if facts.labels(p).get(keys.LABEL_POOL) == pool
                and not facts.meta(p).get("deletionTimestamp")]
        return self.rng.choice(live)

    # --- faults ---------------------------------------------------------------------------------------
    def fault(self, component: str) -> None:
        down = round(self.rng.uniform(*DOWN_S), 1)
        self.log("fault", component, f"SIGKILL, down {down}s")
        self.stack.crash(component, down)
        self.faults[component] += 1
        self.log("fault", component, "restarted")

    def check_alive(self, component: str) -> None:
        """The restarted component still runs after the pause that followed its fault."""
        procs = {"operator": self.stack.operator and self.stack.operator.popen,
                 "agent": self.stack.agent and self.stack.agent.popen,
                 "topology-etcd": self.stack.topo and self.stack.topo.process,
                 "kube-apiserver": self.stack.cluster and self.stack.cluster._apiserver}
        proc = procs[component]
        if proc is not None and proc.poll() is None:
            self.survived[component] += 1
        else:
            self.log("fault", component, f"DID NOT SURVIVE: exit code {proc and proc.poll()}")

    def run(self) -> float:
        """Every round; returns the moment (monotonic) the last fault's component was back."""
        faults = iter(self.schedule)
        last_fault_end = self.started
        for round_no in range(ROUNDS):
            self.observe()
            self.change(round_no)
            for _ in range(FAULTS_PER_ROUND):
                self.pause()
                component = next(faults)
                self.fault(component)
                last_fault_end = time.monotonic()
                self.pause()
                self.check_alive(component)
        return last_fault_end


def test_chaos_soak(watched: Watched) -> None:
    stack = watched.stack
    chaos = Chaos(watched, SEED)
    note("chaos soak", f"seed {SEED}, {ROUNDS} rounds of one change and {FAULTS_PER_ROUND} faults")
    last_fault_end = chaos.run()

    replicas = sum(chaos.replicas.values())
    chaos.log("converge", "shard", f"generation {chaos.generation}, {replicas} pods, {dict(chaos.replicas)}")
    converge(stack, chaos.generation, replicas=replicas, timeout=1200)
    convergence = time.monotonic() - last_fault_end
    chaos.observe()
    chaos.log("converge", "shard", f"Ready at generation {chaos.generation}, {convergence:.0f}s after the last fault")

    events = list(watched.timeline.events)
    deleted = list(dict.fromkeys(e.uid for e in events if e.type == "DELETED" and e.index >= 0))  # pool pods
    unnamed = [uid for uid in deleted if uid not in chaos.names]
    assert not unnamed, f"pods deleted before their standby name was seen: {unnamed}"
    primaries = [uid for uid in deleted if drained_as_primary(watched, uid)]
    assert_out_of_sync_set_when_deleted(watched, chaos.names, [uid for uid in deleted if uid not in primaries],
                                        after_s=AFTER_S)
    for uid in primaries:
        assert "ready-for-deletion" in watched.timeline.drain_states(uid), "a primary went without its drain"
    assert_nothing_lost(watched)
    assert primary_label_overlaps(events) == []

    acked, outage = len(watched.load.acked), watched.load.longest_outage()
    summary = {
        "seed": SEED, "rounds": ROUNDS,
        "changes": dict(Counter(s.what for s in chaos.steps if s.kind == "change")),
        "faults injected": dict(chaos.faults), "faults survived": dict(chaos.survived),
        "standbys deleted (each drained, out of the synchronous set)": len(deleted) - len(primaries),
        "primaries deleted (each drained)": len(primaries),
        "convergence after the last fault (s)": round(convergence),
        "soak duration (s)": round(time.monotonic() - chaos.started),
        "writes acknowledged": acked, "acknowledged writes lost": 0,
        "longest write outage (s)": round(outage.seconds, 1),
        "write errors": dict(watched.load.errors),
    }
    for key, value in summary.items():
        note(f"chaos soak: {key}", value)
    for proc in (stack.operator, stack.agent):
        assert proc is not None and proc.alive(), f"the {proc and proc.name} died: {proc and proc.tail()}"
    assert chaos.survived == chaos.faults, f"faults not survived: {chaos.faults - chaos.survived}"
