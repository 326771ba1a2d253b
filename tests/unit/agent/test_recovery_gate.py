"""The readiness gate's verdict (agent/recovery_gate.py): a pooler whose PostgreSQL is out of recovery
while the newest rule names another leader is kept unready; not knowing changes nothing."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.plan.shard import plan
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from multigres_pools.agent.recovery_gate import gated, verdict
from multigres_pools.dataplane.base import Leadership, PoolerId
from multigres_pools.dataplane.v0_1 import pick_leadership
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from tests import render_corpus as corpus

from ..plan.plan_factories import NOW, desired, desired_pool, healthy, observed, shard_cr
from .test_leadership_v01 import PRIMARY, answer, pooler

STAMP = "2026-05-01T12:00:00Z"
A, B, C = PoolerId("zone1", "a"), PoolerId("zone1", "b"), PoolerId("zone1", "c")


def test_the_round_says_who_runs_postgres_in_and_out_of_recovery() -> None:
    got = pick_leadership([(pooler("a"), answer("a", 3, 1, "a", PRIMARY)), (pooler("b"), answer("b", 3, 1, "a")),
                           (pooler("c"), answer("c", 2, 1, "c", PRIMARY)),
                           (pooler("d"), answer("d", 3, 1, "a", mpd.POSTGRES_STATUS_STARTING))])
    assert got.writable == {A, C} and got.in_recovery == {B}
    # No rule yet (a shard being initialised): the sets are still reported.
    fresh = pick_leadership([(pooler("a"), mpd.StatusResponse(status=mpd.Status(postgres_status=PRIMARY)))])
    assert fresh.named is None and fresh.writable == {A}


def test_the_leader_and_standbys_in_recovery_pass_a_writable_follower_does_not() -> None:
    round_ = Leadership(None, A, writable=frozenset({A, C}), in_recovery=frozenset({B}))
    leader, standby, rogue = verdict(A, round_), verdict(B, round_), verdict(C, round_)
    assert leader is not None and leader.ready and leader.reason is keys.RecoveryGateReason.LEADER
    assert standby is not None and standby.ready and standby.reason is keys.RecoveryGateReason.STANDBY
    assert rogue is not None and not rogue.ready and rogue.reason is keys.RecoveryGateReason.WRITABLE_STANDBY
    assert "zone1/c" in rogue.message and "zone1/a leads" in rogue.message


def test_no_verdict_without_an_answer_a_named_leader_or_a_pooler() -> None:
    round_ = Leadership(None, A, writable=frozenset({A}), in_recovery=frozenset())
    assert verdict(B, round_) is None  # did not answer, or is starting
    assert verdict(None, round_) is None
    assert verdict(C, Leadership(None, None, writable=frozenset({C}))) is None  # nobody named: not knowing


def test_v0_1_pool_pods_carry_the_gate_and_era_a_pods_do_not() -> None:
    pod = render.desired_state(model.load_spec(corpus.spec()), "db").pools[0].pod(0)
    assert pod["spec"]["readinessGates"] == [{"conditionType": keys.POD_READINESS_GATE}] and gated(pod)
    era_a = render.desired_state(model.load_spec(corpus.spec(corpus.ERA_A)), "db").pools[0].pod(0)
    assert "readinessGates" not in era_a["spec"] and not gated(era_a)


def test_a_pod_the_gate_holds_makes_the_shard_degraded_with_its_message() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr())
    before = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    assert {c["type"]: c["status"] for c in before["conditions"]}[keys.ShardCondition.WRITABLE_STANDBY] == "False"
    pods[1].setdefault("status", {}).setdefault("conditions", []).append(
        {"type": keys.POD_READINESS_GATE, "status": "False", "reason": "WritableStandby",
         "message": "zone1/b: PostgreSQL is out of recovery but zone1/a leads the shard"})
    obs = observed(pods, pvcs, cr=shard_cr())
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    conds = {c["type"]: c for c in st["conditions"]}
    assert st["phase"] == "Degraded"
    assert conds[keys.ShardCondition.WRITABLE_STANDBY]["status"] == "True"
    assert "zone1/b" in conds[keys.ShardCondition.WRITABLE_STANDBY]["message"]


def test_the_round_says_which_standbys_stream() -> None:
    streaming = answer("b", 3, 1, "a")
    streaming.status.replication_status.wal_receiver_status = "streaming"
    waiting = answer("c", 3, 1, "a")
    waiting.status.replication_status.wal_receiver_status = "waiting"
    got = pick_leadership([(pooler("a"), answer("a", 3, 1, "a", PRIMARY)), (pooler("b"), streaming),
                           (pooler("c"), waiting)])
    assert got.streaming == {B}
