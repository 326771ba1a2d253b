"""The clone (spec.backup.cloneFrom): the one certified rule change that lets a shard restored from another
shard's repository elect a primary on Multigres v0.1.0.

The restored `multigres.current_rule` names the source's cohort; none of its poolers exist in the
clone's topology, so multiorch never elects (and reports no problem). The clone's poolers are all
standbys frozen at the end of the copied archive, and the source's poolers live in another topology:
no write under the restored rule can exist in the clone beyond the highest LSN its poolers report.
That is the attestation `ApplyCertifiedRuleChange` asks for (docs/operations.md, "Clone a shard";
proven in tests/integration/multigres/repository/test_clone_on_multigres.py).

Pure: `plan` decides from the poolers' Status answers; the caller sends the request to one multiorch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from ansible_collections.multigres.pools.plugins.module_utils.state.facts import lsn_bytes

from ..proto.gen.v0_1 import clustermetadata_pb2 as cm
from ..proto.gen.v0_1 import multiorchdata_pb2 as orch


@dataclass(frozen=True)
class Restored:
    """What one pooler of the clone reports (MultiPoolerManager.Status)."""

    cell: str
    name: str
    replica: bool  # pooler type REPLICA and PostgreSQL running
    rule: cm.ShardRule | None  # current_position.rule
    lsn: str  # current_position.lsn
    revoked_below: int  # term_revocation.revoked_below_term (0: none stored)


def _key(rule: cm.ShardRule) -> tuple[int, int]:
    return rule.rule_number.coordinator_term, rule.rule_number.leader_subterm


def refusal(poolers: Sequence[Restored]) -> str | None:
    """Why the change may not be certified now ("" never: None means it may)."""
    if not poolers:
        return "no pooler reports"
    own = {(p.cell, p.name) for p in poolers}
    for p in poolers:
        if not p.replica:
            return f"pooler {p.cell}_{p.name} is not a running REPLICA"
        if p.rule is None or lsn_bytes(p.lsn) is None:
            return f"pooler {p.cell}_{p.name} reports no rule or no WAL position"
        if any((m.cell, m.name) in own for m in p.rule.cohort_members):
            return f"pooler {p.cell}_{p.name}'s rule names this shard's own poolers: not an inherited cohort"
    if len({_key(p.rule) for p in poolers if p.rule is not None}) != 1:
        return "the poolers report different rules"
    return None


def plan(poolers: Sequence[Restored], *, orchestrator: cm.ID, durability: cm.DurabilityPolicy, shard_key: cm.ShardKey,
         now: dt.datetime, reason: str, attempt: int = 0) -> orch.ApplyCertifiedRuleChangeRequest:
    """The request: this shard's poolers as the cohort, the most advanced one as leader, the restored rule
    as the outgoing one and the highest LSN as the frozen one. `attempt` raises the term after a refused
    try (a pooler refuses a second revocation at a term it accepted)."""
    problem = refusal(poolers)
    if problem is not None:
        raise ValueError(problem)
    restored = poolers[0].rule
    assert restored is not None  # refusal() checked every pooler's rule
    term = max(restored.rule_number.coordinator_term, *(p.revoked_below for p in poolers)) + 1 + attempt
    # The most advanced pooler leads (ties: the first by cell and name); its position is the frozen one.
    leader = min(poolers, key=lambda p: (-(lsn_bytes(p.lsn) or 0), p.cell, p.name))
    frozen = leader.lsn

    def pooler_id(p: Restored) -> cm.ID:
        return cm.ID(component=cm.ID.MULTIPOOLER, cell=p.cell, name=p.name)

    rule = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=term), leader_id=pooler_id(leader),
                        cohort_members=[pooler_id(p) for p in sorted(poolers, key=lambda p: (p.cell, p.name))],
                        durability_policy=durability, coordinator_id=orchestrator)
    rule.creation_time.FromDatetime(now)
    revocation = cm.TermRevocation(revoked_below_term=term, accepted_coordinator_id=orchestrator,
                                   outgoing_rule=restored.rule_number)
    revocation.coordinator_initiated_at.FromDatetime(now)
    return orch.ApplyCertifiedRuleChangeRequest(
        shard_key=shard_key, proposed_rule=rule, reason=reason,
        cert=cm.ExternallyCertifiedRevocation(term_revocation=revocation, frozen_lsn=frozen))
