"""Who leads a v0.1.0 shard, from the poolers' own Status answers (no record types): multiorch's
highest-term rule, so a restarted old primary that still leads its own older rule is outvoted."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent.context import ShardView
from multigres_pools.dataplane.base import Leadership, Pooler, PoolerId, ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1, pick_leadership
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd


def pooler(name: str, role: keys.Role = keys.Role.REPLICA) -> Pooler:
    return Pooler(PoolerId("zone1", name), role, f"{name}.hl", 15270, "postgres", "default", "0-inf", f"/k/{name}")


def answer(name: str, term: int, subterm: int, leader: str,
           postgres: int = mpd.POSTGRES_STATUS_STANDBY) -> mpd.StatusResponse:
    ident = cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=name)
    rule = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=term, leader_subterm=subterm),
                        leader_id=cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=leader))
    consensus = cm.ConsensusStatus(id=ident, current_position=cm.PoolerPosition(rule=rule))
    return mpd.StatusResponse(status=mpd.Status(postgres_status=postgres), consensus_status=consensus)


PRIMARY = mpd.POSTGRES_STATUS_PRIMARY


def test_the_leader_of_the_newest_rule_is_confirmed_whatever_its_record_says() -> None:
    a, b, c = pooler("a", keys.Role.PRIMARY), pooler("b"), pooler("c")
    got = pick_leadership([(a, answer("a", 3, 1, "b")), (b, answer("b", 3, 2, "b", PRIMARY)),
                           (c, answer("c", 3, 1, "b"))])
    assert got.confirmed == b and got.named == PoolerId("zone1", "b")


def test_a_restarted_old_primary_leading_its_older_rule_is_outvoted() -> None:
    old, new, replica = pooler("old", keys.Role.PRIMARY), pooler("new", keys.Role.PRIMARY), pooler("r")
    answers = [(old, answer("old", 2, 5, "old", PRIMARY)), (new, answer("new", 3, 1, "new", PRIMARY)),
               (replica, answer("r", 3, 1, "new"))]
    assert pick_leadership(answers).confirmed == new
    # Even when the new leader does not answer: its followers name it, so the old one is not confirmed.
    got = pick_leadership([answers[0], answers[2]])
    assert got.confirmed is None and got.named == PoolerId("zone1", "new")


def test_not_confirmed_while_promoting_on_a_tie_or_with_nothing_to_read() -> None:
    a, b = pooler("a"), pooler("b")
    assert pick_leadership([(a, answer("a", 4, 1, "a", mpd.POSTGRES_STATUS_PROMOTING))]).confirmed is None
    tie = pick_leadership([(a, answer("a", 4, 1, "a", PRIMARY)), (b, answer("b", 4, 1, "b", PRIMARY))])
    assert tie.confirmed is None
    assert pick_leadership([]).named is None
    assert pick_leadership([(a, mpd.StatusResponse())]).named is None  # not initialised: no rule yet


def test_a_record_less_leader_is_still_named() -> None:
    """A primary drain deletes the primary's record before its pod goes: the followers still name it."""
    b, c = pooler("b"), pooler("c")
    got = pick_leadership([(b, answer("b", 5, 3, "p")), (c, answer("c", 5, 3, "p"))])
    assert got.confirmed is None and got.named == PoolerId("zone1", "p")


class _Named(V0_1):
    """The adapter with its Status round replaced by a fixed answer (no pooler to ask here)."""

    def __init__(self, named: PoolerId | None) -> None:
        super().__init__()
        self.named = named

    def leadership(self, poolers) -> Leadership:  # type: ignore[no-untyped-def]
        return Leadership(None, self.named)


def _pod(name: str, service_id: str) -> dict:
    args = ["--topo-global-server-addresses=etcd:2379", "--topo-global-root=/multigres/global", "--cell=zone1",
            "--database=postgres", "--table-group=default", "--shard=0-inf", f"--service-id={service_id}"]
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "multipooler", "args": args}]}}


def test_a_pod_whose_record_is_gone_is_still_the_primary_the_newest_rule_names() -> None:
    """A primary drain deletes the record before `ready-for-deletion`; an agent restarted in between
    must still treat the pod as the primary (era A's record test would call it a standby)."""
    topo = ShardTopology(("etcd:2379",), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))
    others = [pooler("p-b"), pooler("p-c")]
    view = ShardView("ns", topo, [], others, dataplane=_Named(PoolerId("zone1", "p-a")))
    assert view.is_primary(_pod("pool-0", "p-a")) and not view.is_primary(_pod("pool-1", "p-b"))
    unknown = ShardView("ns", topo, [], others, dataplane=_Named(None))
    assert not unknown.is_primary(_pod("pool-0", "p-a"))
