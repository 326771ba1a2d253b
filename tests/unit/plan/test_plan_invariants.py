"""Hypothesis stateful tests: whatever users, the kubelet and the agent do between passes, every
plan keeps the safety invariants:

- never more than one drain per pool;
- never delete a pod that is not ready-for-deletion or terminal (outside shard deletion);
- never delete the PVC of an existing pod;
- never pick the primary for scale-down while a non-primary candidate exists;
- never two rolling-update victims at once (in the whole shard);
- never two drains at once in the shard for pods whose PostgreSQL stays down.

And, once the disturbances stop, the shard converges: every pool has its replicas, Ready, on the
desired spec-hash.
"""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.plan.context import pool_views
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy
from ansible_collections.multigres.pools.plugins.module_utils.state.facts import PodFacts
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from .plan_factories import NOW, desired, desired_pool, plan
from .plan_sim import Sim

CELLS = ("z1", "z2")


def _drain_counts(sim: Sim) -> tuple[dict[str, int], int]:
    per_pool: dict[str, int] = {}
    rolling = 0
    for pod in sim.pods():
        ann = facts.annotations(pod)
        if ann.get(keys.ANN_DRAIN_STATE):
            cell = facts.labels(pod)[keys.LABEL_CELL]
            per_pool[cell] = per_pool.get(cell, 0) + 1
            rolling += ann.get(keys.ANN_DRAIN_REASON) == keys.DrainReason.ROLLING_UPDATE
    return per_pool, rolling


class ShardMachine(RuleBasedStateMachine):
    @initialize(replicas=st.integers(1, 4))
    def start(self, replicas: int) -> None:
        self.sim = Sim()
        self.replicas = {cell: replicas for cell in CELLS}
        self.spec_hash = "h1"
        self.when_scaled = PVCPolicy.DELETE
        self.clock = NOW
        self.passes = 0

    def _desired(self):  # type: ignore[no-untyped-def]
        return desired(*(desired_pool("main", c, replicas=self.replicas[c], spec_hash=self.spec_hash,
                                      when_scaled=self.when_scaled) for c in CELLS))

    # --- what users, the kubelet and the agent do ------------------------------------------------
    @rule(cell=st.sampled_from(CELLS), replicas=st.integers(1, 5))
    def scale(self, cell: str, replicas: int) -> None:
        self.replicas[cell] = replicas

    @rule(spec_hash=st.sampled_from(["h1", "h2", "h3"]))
    def change_spec(self, spec_hash: str) -> None:
        self.spec_hash = spec_hash

    @rule(policy=st.sampled_from(list(PVCPolicy)))
    def change_policy(self, policy: PVCPolicy) -> None:
        self.when_scaled = policy

    @rule(data=st.data())
    def kubelet(self, data: st.DataObject) -> None:
        pods = [facts.name(p) for p in self.sim.pods()]
        if not pods:
            return
        name = data.draw(st.sampled_from(pods))
        what = data.draw(st.sampled_from(["ready", "ready", "not-ready", "fail"]))
        if what == "fail":
            self.sim.fail(name)
        else:
            self.sim.set_ready(name, what == "ready")

    @rule()
    def all_ready(self) -> None:
        self.sim.all_ready()

    @rule()
    def agent(self) -> None:
        self.sim.agent_step()
        self.sim.elect_primary()

    @rule(data=st.data())
    def user_deletes_a_pod(self, data: st.DataObject) -> None:
        pods = [facts.name(p) for p in self.sim.pods()]
        if pods:
            self.sim.user_delete(data.draw(st.sampled_from(pods)))

    @rule(data=st.data())
    def agent_marks_postgres_stuck(self, data: st.DataObject) -> None:
        pods = [facts.name(p) for p in self.sim.pods() if not facts.is_terminating(p)]
        if pods:
            self.sim.mark_stuck(data.draw(st.sampled_from(pods)))

    @rule(data=st.data())
    def orchestrator_marks_drained(self, data: st.DataObject) -> None:
        replicas = [facts.name(p) for p in self.sim.pods()
                    if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.REPLICA]
        if replicas:
            self.sim.set_role(data.draw(st.sampled_from(replicas)), keys.Role.DRAINED)

    # --- the engine --------------------------------------------------------------------------------
    @rule()
    def reconcile(self) -> None:
        want = self._desired()
        before = self.sim.observed()
        result = plan(want, before, self.clock)
        self._check_plan(want, before, result)
        self.sim.execute(result.actions)
        self.clock += dt.timedelta(seconds=5)
        self.passes += 1

    def _check_plan(self, want, before, result) -> None:  # type: ignore[no-untyped-def]
        assert not result.errors
        views = {v.dp.cell: v for v in pool_views(want, before)}
        pods_by_name = {facts.name(p): p for p in before.pods}
        rolling_requests = 0
        for action in result.actions:
            if action.verb == "delete" and action.kind == "Pod":
                pod = PodFacts.of(pods_by_name[action.name], 0)
                assert pod.drain_state == keys.DrainState.READY_FOR_DELETION or pod.terminal, action.reason
                # A drained pod's delete names its reason, re-checked if the pod changed meanwhile (409).
                drained = pod.drain_state == keys.DrainState.READY_FOR_DELETION
                assert dict(action.still_annotated) == ({keys.ANN_DRAIN_STATE: pod.drain_state} if drained else {})
            if action.verb == "delete" and action.kind == "PersistentVolumeClaim":
                assert f"data-{action.name.removeprefix('data-')}" == action.name
                assert action.name.removeprefix("data-") not in pods_by_name, action.reason
            ann = ((action.body or {}).get("metadata") or {}).get("annotations") or {}
            if action.kind == "Pod" and ann.get(keys.ANN_DRAIN_STATE) == keys.DrainState.REQUESTED:
                target = pods_by_name[action.name]
                view = views[facts.labels(target)[keys.LABEL_CELL]]
                victim = next(p for p in view.pods.values() if p.name == action.name)
                if ann[keys.ANN_DRAIN_REASON] == keys.DrainReason.SCALE_DOWN and victim.is_primary:
                    others = [p for p in view.members() if p.name != victim.name and not p.terminating
                              and not p.in_drain]
                    assert not others, f"primary {victim.name} picked while {others[0].name} could go"
                rolling_requests += ann.get(keys.ANN_DRAIN_REASON) == keys.DrainReason.ROLLING_UPDATE
                if ann[keys.ANN_DRAIN_REASON] == keys.DrainReason.POSTGRES_STUCK:
                    busy = [facts.name(p) for p in before.pods if facts.name(p) != action.name and (
                        facts.is_terminating(p) or facts.annotations(p).get(keys.ANN_DRAIN_STATE))]
                    assert not busy, f"healing {action.name} beside the drains of {busy}"
        _, rolling_before = _drain_counts_from(before)
        assert rolling_requests + rolling_before <= 1

    @invariant()
    def at_most_one_drain_per_pool_and_one_rolling_victim(self) -> None:
        if not hasattr(self, "sim"):
            return
        per_pool, rolling = _drain_counts(self.sim)
        assert all(n <= 1 for n in per_pool.values()), per_pool
        assert rolling <= 1

    @precondition(lambda self: hasattr(self, "sim"))
    @rule()
    def settles(self) -> None:
        """With no more disturbances, 60 rounds of engine + agent + kubelet converge."""
        sim = self.sim
        for _ in range(60):
            self.reconcile()
            sim.agent_step()
            sim.all_ready()
            sim.agent_step()
            sim.elect_primary()
        want = self._desired()
        result = plan(want, sim.observed(), self.clock)
        for view in pool_views(want, sim.observed()):
            members = view.members()
            assert len(members) == view.dp.replicas, (view.label, [p.name for p in members])
            assert all(p.ready and p.spec_hash == view.dp.spec_hash for p in members)
        assert [a for a in result.actions if a.verb != "event"] == [], result.lines()


def _drain_counts_from(observed) -> tuple[dict[str, int], int]:  # type: ignore[no-untyped-def]
    sim = Sim()
    for pod in observed.pods:
        sim.objects[("Pod", facts.name(pod))] = pod
    return _drain_counts(sim)


TestShardInvariants = ShardMachine.TestCase
TestShardInvariants.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
