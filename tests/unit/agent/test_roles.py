"""Matching records to pods (contract §2.6), label changes, and what pruning may delete."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent.roles import desired_roles, prunable, role_changes
from multigres_pools.dataplane.base import Pooler, PoolerId


def rec(name: str, host: str, role: keys.Role) -> Pooler:
    return Pooler(PoolerId("zone1", name), role, host, 15270, "postgres", "default", "0-inf", f"/k/{name}")


def pod(name: str, role: str | None = None, deleting: bool = False) -> dict:
    meta = {"name": name, "labels": {keys.LABEL_ROLE: role} if role else {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_hostname_match_not_prefix_of_another_pod() -> None:
    records = [rec("p-1", "shard-pool-1.hl.ns.svc", keys.Role.PRIMARY),
               rec("p-2", "shard-pool-10.hl.ns.svc", keys.Role.REPLICA)]
    roles = desired_roles([pod("shard-pool-1"), pod("shard-pool-10"), pod("shard-pool-2")], records)
    assert roles == {"shard-pool-1": "PRIMARY", "shard-pool-10": "REPLICA", "shard-pool-2": None}


def test_changes_skip_deleting_pods_and_unchanged_labels() -> None:
    records = [rec("p-1", "a", keys.Role.PRIMARY), rec("p-2", "b", keys.Role.DRAINED)]
    changes = role_changes([pod("a", "PRIMARY"), pod("b", "REPLICA"), pod("c", "REPLICA"), pod("d", deleting=True)],
                           records)
    assert [(p["metadata"]["name"], r) for p, r in changes] == [("b", "DRAINED"), ("c", None)]


def test_prunable_keeps_matched_terminating_and_primary() -> None:
    records = [rec("p-1", "a.hl", keys.Role.REPLICA), rec("p-2", "gone.hl", keys.Role.REPLICA),
               rec("p-3", "gone-primary.hl", keys.Role.PRIMARY), rec("p-4", "dying.hl", keys.Role.REPLICA)]
    assert [r.id.name for r in prunable(records, [pod("a"), pod("dying", deleting=True)])] == ["p-2"]


# --- v0.1.0: PRIMARY from the confirmed leader -------------------------------------------------------
def test_confirmed_primary_only_for_the_leader() -> None:
    stale, leader, replica = (rec("p-1", "a", keys.Role.PRIMARY), rec("p-2", "b", keys.Role.REPLICA),
                              rec("p-3", "c", keys.Role.REPLICA))
    roles = desired_roles([pod("a"), pod("b"), pod("c")], [stale, leader, replica], confirmed=True, leader=leader)
    assert roles == {"a": "REPLICA", "b": "PRIMARY", "c": "REPLICA"}


def test_without_a_confirmed_leader_nobody_is_promoted_and_a_primary_label_on_a_primary_record_stays() -> None:
    records = [rec("p-1", "a", keys.Role.PRIMARY), rec("p-2", "b", keys.Role.PRIMARY),
               rec("p-3", "c", keys.Role.REPLICA)]
    roles = desired_roles([pod("a", "PRIMARY"), pod("b", "REPLICA"), pod("c", "PRIMARY")], records, confirmed=True)
    assert roles == {"a": "PRIMARY", "b": "REPLICA", "c": "REPLICA"}


def test_demotions_come_before_the_promotion_and_reach_terminating_pods() -> None:
    old, new = rec("p-1", "a", keys.Role.PRIMARY), rec("p-2", "b", keys.Role.PRIMARY)
    pods = [pod("b", "REPLICA"), pod("a", "PRIMARY", deleting=True), pod("c", "REPLICA", deleting=True)]
    changes = role_changes(pods, [old, new], confirmed=True, leader=new)
    assert [(p["metadata"]["name"], r) for p, r in changes] == [("a", "REPLICA"), ("b", "PRIMARY")]


def test_a_stopped_or_drained_record_is_never_primary() -> None:
    stopped = Pooler(PoolerId("zone1", "p-1"), None, "a", 15270, "postgres", "default", "0-inf", "/k/p-1", stopped=True)
    drained = rec("p-2", "b", keys.Role.DRAINED)
    roles = desired_roles([pod("a", "PRIMARY"), pod("b")], [stopped, drained], confirmed=True)
    assert roles == {"a": None, "b": "DRAINED"}
