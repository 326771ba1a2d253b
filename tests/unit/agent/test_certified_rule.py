"""WIP (issue #25): the certified rule change a clone needs (dataplane/certified_rule.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from multigres_pools.dataplane import certified_rule as cr
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm

NOW = dt.datetime(2026, 11, 29, 5, 0, tzinfo=dt.UTC)
ORCH = cm.ID(component=cm.ID.MULTIORCH, cell="zone1", name="clone-multiorch-zone1-abc")
SOURCE = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=1, leader_subterm=1),
                      leader_id=cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name="p-source1"),
                      cohort_members=[cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=n)
                                      for n in ("p-source1", "p-source2", "p-source3")])


def _poolers(*lsns: str, rule: cm.ShardRule = SOURCE, revoked: int = 0) -> list[cr.Restored]:
    return [cr.Restored("zone1", f"p-clone{i}", True, rule, lsn, revoked) for i, lsn in enumerate(lsns)]


def _plan(poolers: list[cr.Restored], attempt: int = 0):  # type: ignore[no-untyped-def]
    return cr.plan(poolers, orchestrator=ORCH, durability=cm.DurabilityPolicy(policy_name="AT_LEAST_2"),
                   shard_key=cm.ShardKey(database="postgres", table_group="default", shard="0-inf"),
                   now=NOW, reason="clone of db/orders", attempt=attempt)


def test_the_most_advanced_clone_pooler_leads_under_the_next_term_and_the_restored_rule_is_revoked() -> None:
    req = _plan(_poolers("0/7000000", "0/7000000", "0/6FFFFF8"))
    rule, cert = req.proposed_rule, req.cert
    assert rule.rule_number.coordinator_term == 2 == cert.term_revocation.revoked_below_term
    assert rule.leader_id.name == "p-clone0" and [m.name for m in rule.cohort_members] == [
        "p-clone0", "p-clone1", "p-clone2"]
    assert (cert.term_revocation.outgoing_rule.coordinator_term,
            cert.term_revocation.outgoing_rule.leader_subterm) == (1, 1)  # term AND subterm, as restored
    assert cert.frozen_lsn == "0/7000000"
    assert rule.coordinator_id == ORCH == cert.term_revocation.accepted_coordinator_id
    assert rule.creation_time.ToDatetime(tzinfo=dt.UTC) == NOW


def test_a_stored_revocation_and_a_retry_raise_the_term() -> None:
    assert _plan(_poolers("0/7000000", "0/7000000", revoked=3)).proposed_rule.rule_number.coordinator_term == 4
    assert _plan(_poolers("0/7000000", "0/7000000"), attempt=1).cert.term_revocation.revoked_below_term == 3


def test_it_is_refused_unless_every_pooler_is_a_replica_of_one_foreign_rule() -> None:
    own = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=1),
                       cohort_members=[cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name="p-clone0")])
    with pytest.raises(ValueError, match="not an inherited cohort"):
        _plan(_poolers("0/7000000", rule=own))
    with pytest.raises(ValueError, match="not a running REPLICA"):
        _plan([cr.Restored("zone1", "p-clone0", False, SOURCE, "0/7000000", 0)])
    with pytest.raises(ValueError, match="no rule or no WAL position"):
        _plan(_poolers("garbage"))
    other = cm.ShardRule()
    other.CopyFrom(SOURCE)
    other.rule_number.leader_subterm = 2
    with pytest.raises(ValueError, match="different rules"):
        _plan([*_poolers("0/7000000"), cr.Restored("zone1", "p-clone9", True, other, "0/7000000", 0)])
    with pytest.raises(ValueError, match="no pooler"):
        _plan([])
