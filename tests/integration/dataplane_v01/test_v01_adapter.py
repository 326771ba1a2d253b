"""The v0.1.0 adapter against real Multigres v0.1.0 with a live multiorch (500 ms intervals).

These are also the experiments behind the drain design in docs/agent.md ("Draining on Multigres
v0.1.0"): what multiorch does when a standby is removed while ELIGIBLE, made INELIGIBLE, killed or
stopped gracefully. Durations are printed (run with -s to see them); assertions only poll.

Tests share one shard (per package) and run in file order; each starts from a healthy shard
(`healthy`: every pooler runs, ELIGIBLE and registered, cohort of three).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from multigres_pools.dataplane.base import (
    DataPlaneError,
    Eligibility,
    Pooler,
    RefusalReason,
    VersionMismatch,
)
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.dataplane.v0_1 import CONSENSUS, V0_1
from multigres_pools.playground.provisioned import CELLS, ProvisionedShard
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from tests.helpers.polling import eventually
from tests.integration.dataplane_v01.support import listed, note, replicas, stays, timed

pytestmark = pytest.mark.multigres


def test_records_primary_and_cohort_decode(shard: ProvisionedShard, dp: V0_1, healthy: Pooler) -> None:
    poolers = dp.list_poolers(shard.topology())
    assert sorted(p.id.cell for p in poolers) == list(CELLS)
    assert {p.id.name for p in poolers} == {shard.service_id(c) for c in CELLS}
    assert all((p.database, p.tablegroup, p.shard) == ("postgres", "default", "0-inf") for p in poolers)
    assert all(isinstance(p.native, cm.MultiPooler) and p.grpc_port for p in poolers)
    primary = dp.leader(poolers)
    assert primary == healthy and primary.role.value == "PRIMARY"
    sync = dp.sync_replication(primary)
    others = {p.id for p in poolers} - {primary.id}
    assert sync.leader == primary.id and set(sync.cohort) == {p.id for p in poolers}
    assert set(sync.standbys) == others  # the GUC quotes the primary too; the adapter drops it
    assert set(sync.connected) == others and sync.ready
    assert (sync.durability.required, sync.durability.multi_cell) == (2, False)
    assert all(sync.durable_without(o) for o in others)
    for rep in replicas(dp, shard, primary):
        state = dp.standby_state(rep)
        assert (state.eligibility, state.replicating, state.is_leader) == (Eligibility.ELIGIBLE, True, False)
    # A replica is not the leader even if someone trusted a stale record.
    with pytest.raises(DataPlaneError) as err:
        dp.sync_replication(replicas(dp, shard, primary)[0])
    assert err.value.reason is RefusalReason.PRIMARY_IN_RECOVERY


def test_remove_of_an_eligible_standby_is_undone_by_multiorch(shard: ProvisionedShard, dp: V0_1,
                                                              healthy: Pooler) -> None:
    """The race the drain must not rely on: REMOVE works, and multiorch adds it straight back."""
    primary, victim = healthy, replicas(dp, shard, healthy)[-1]
    before = dp.consensus(primary).consensus_status.current_position.rule.rule_number.leader_subterm
    dp.remove_standby(primary, victim.id)
    removed_at = time.monotonic()

    def readded() -> bool:
        rule = dp.consensus(primary).consensus_status.current_position.rule
        return rule.rule_number.leader_subterm >= before + 2 and listed(dp, primary, victim)

    eventually(readded, timeout=60, what=f"multiorch re-adding {victim.id}", interval=0.05)
    note("REMOVE of an ELIGIBLE standby -> re-added by multiorch", time.monotonic() - removed_at)


def test_ineligible_standby_leaves_stays_out_and_comes_back_on_start(shard: ProvisionedShard, dp: V0_1,
                                                                     healthy: Pooler) -> None:
    """The drain's step: StopReplication (INELIGIBLE) then our own CAS REMOVE; the undo: StartReplication."""
    primary, (other, victim) = healthy, replicas(dp, shard, healthy)
    started = time.monotonic()
    dp.make_ineligible(victim)
    dp.make_ineligible(victim)  # idempotent
    dp.remove_standby(primary, victim.id)
    eventually(lambda: not listed(dp, primary, victim), timeout=30, what=f"{victim.id} out of the cohort",
               interval=0.05)
    note("StopReplication + CAS REMOVE -> out of the cohort", time.monotonic() - started)
    state = dp.standby_state(victim)
    assert (state.eligibility, state.replicating) == (Eligibility.INELIGIBLE, False)
    stays(lambda: not listed(dp, primary, victim), 15, f"{victim.id} was added back while INELIGIBLE")
    assert dp.leader(dp.list_poolers(shard.topology())) == primary  # no failover, no churn on the primary

    # With one standby out, the other one is all the AT_LEAST_2 policy has left.
    sync = dp.sync_replication(primary)
    assert not sync.durable_without(other.id)
    with pytest.raises(DataPlaneError) as err:
        dp.remove_standby(primary, other.id)
    assert err.value.reason is RefusalReason.DURABILITY_POLICY
    assert listed(dp, primary, other)

    dp.make_eligible(victim)
    note("StartReplication -> back in the cohort", timed(lambda: listed(dp, primary, victim), 60,
                                                          f"{victim.id} back in the cohort"))


# An observation of multiorch's own (slow, rewind-driven) path that the drain does not rely on; it times out
# on a loaded machine while the replica's postgres restarts, so it runs with the soak matrix.
@pytest.mark.soak
def test_stop_replication_alone_makes_multiorch_remove_it(shard: ProvisionedShard, dp: V0_1,
                                                          healthy: Pooler) -> None:
    """Without our REMOVE, multiorch removes an INELIGIBLE member itself, but only after its
    FixReplication attempt (SetTermPrimary, 5 s of verification, pg_rewind) has run its course."""
    primary, victim = healthy, replicas(dp, shard, healthy)[-1]
    dp.make_ineligible(victim)
    note("StopReplication alone -> multiorch removes it", timed(
        lambda: not listed(dp, primary, victim), 120, f"multiorch removing INELIGIBLE {victim.id}"))
    stays(lambda: not listed(dp, primary, victim), 10, f"{victim.id} was added back while INELIGIBLE")
    dp.make_eligible(victim)


def test_dead_pooler_needs_our_cas_remove_which_sticks_despite_a_conflict(shard: ProvisionedShard, dp: V0_1,
                                                                          healthy: Pooler) -> None:
    """SIGKILL leaves postgres streaming and the member in the cohort; multiorch never removes it.
    Our REMOVE is sent with a CAS token made stale by a concurrent rule change, so the first attempt
    meets the server's "rule conflict" and the adapter must re-read and retry."""
    primary, (other, victim) = healthy, replicas(dp, shard, healthy)
    shard.signal_pooler(victim.id.cell, signal.SIGKILL)
    shard.wait_pooler_gone(victim.id.cell)
    with pytest.raises(DataPlaneError) as err:
        dp.standby_state(victim)
    assert err.value.reason is RefusalReason.POOLER_UNREACHABLE
    stays(lambda: listed(dp, primary, victim), 5, "multiorch removed a dead pooler by itself")

    conflicts = ConflictingPlane(dp, shard, other)
    conflicts.remove_standby(primary, victim.id)
    assert conflicts.reads >= 2, "the CAS token was never stale: the retry path was not exercised"
    assert not listed(dp, primary, victim)
    stays(lambda: not listed(dp, primary, victim), 10, f"dead {victim.id} was added back")
    conflicts.close()


class ConflictingPlane(V0_1):
    """Changes the rule (REMOVE + ADD of a healthy standby) right after the first CAS read, so the
    REMOVE that follows carries a stale token; a real concurrent writer, not a fake answer."""

    def __init__(self, dp: V0_1, shard: ProvisionedShard, bystander: Pooler) -> None:
        super().__init__(rpc_timeout=5, dial_host=dp._dial_host)
        self.bystander, self.reads = bystander, 0

    def consensus(self, pooler: Pooler):
        response = super().consensus(pooler)
        self.reads += 1
        if self.reads == 1:
            ident = cm.ID(component=cm.ID.MULTIPOOLER, cell=self.bystander.id.cell, name=self.bystander.id.name)
            for op in (mpd.COHORT_UPDATE_OPERATION_REMOVE, mpd.COHORT_UPDATE_OPERATION_ADD):
                rule = super().consensus(pooler).consensus_status.current_position.rule
                request = mpd.UpdateConsensusRuleRequest(operation=op, standby_ids=[ident],
                                                         expected_outgoing_rule=rule.rule_number)
                try:
                    self._call(pooler, CONSENSUS + "UpdateConsensusRule", request, mpd.UpdateConsensusRuleResponse)
                except DataPlaneError as exc:  # multiorch may have re-added it first: that is a change too
                    assert exc.reason is RefusalReason.RULE_CONFLICT, exc
        return response


def test_stale_token_is_a_rule_conflict_and_two_concurrent_removals_both_succeed(
        shard: ProvisionedShard, dp: V0_1, healthy: Pooler) -> None:
    primary = healthy
    rule = dp.consensus(primary).consensus_status.current_position.rule
    stale = cm.RuleNumber(coordinator_term=rule.rule_number.coordinator_term,
                          leader_subterm=rule.rule_number.leader_subterm - 1)
    victim = replicas(dp, shard, primary)[-1]
    request = mpd.UpdateConsensusRuleRequest(
        operation=mpd.COHORT_UPDATE_OPERATION_REMOVE,
        standby_ids=[cm.ID(component=cm.ID.MULTIPOOLER, cell=victim.id.cell, name=victim.id.name)],
        expected_outgoing_rule=stale)
    with pytest.raises(DataPlaneError) as err:
        dp._call(primary, CONSENSUS + "UpdateConsensusRule", request, mpd.UpdateConsensusRuleResponse)
    assert err.value.reason is RefusalReason.RULE_CONFLICT and "rule conflict" in err.value.message
    with pytest.raises(DataPlaneError) as err:
        dp._call(primary, CONSENSUS + "UpdateConsensusRule", mpd.UpdateConsensusRuleRequest(
            operation=mpd.COHORT_UPDATE_OPERATION_REMOVE, standby_ids=request.standby_ids),
            mpd.UpdateConsensusRuleResponse)
    assert err.value.reason is RefusalReason.INVALID_REQUEST  # no CAS token at all

    # Two agents removing the same INELIGIBLE standby at once: one wins, the other re-reads and is done.
    dp.make_ineligible(victim)
    errors: list[Exception] = []

    def remove() -> None:
        try:
            dp.remove_standby(primary, victim.id)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=remove) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and not listed(dp, primary, victim)
    dp.make_eligible(victim)


def test_era_a_adapter_against_v01_reports_version_mismatch(shard: ProvisionedShard, dp: V0_1,
                                                            healthy: Pooler) -> None:
    era_a = EraA(rpc_timeout=5, dial_host=dp._dial_host)
    try:
        with pytest.raises(VersionMismatch) as listing:
            era_a.list_poolers(shard.topology())
        assert "v0.1.0 record" in listing.value.message
        for call in (lambda: era_a.sync_replication(healthy),
                     lambda: era_a.remove_standby(healthy, replicas(dp, shard, healthy)[0].id)):
            with pytest.raises(DataPlaneError) as err:
                call()
            assert err.value.reason is RefusalReason.VERSION_MISMATCH and "UNIMPLEMENTED" in err.value.message
        # Read-only and unchanged RPCs still work across the versions: backups.
        assert isinstance(dp.get_backups(healthy, 0), list)
    finally:
        era_a.close()


def test_trigger_recovery_replaces_a_resigned_primary_and_it_returns_in_recovery(shard: ProvisionedShard, dp: V0_1,
                                                                                 healthy: Pooler) -> None:
    """Issue #24 on real v0.1.0. The agent's handover: after the primary's graceful stop (SIGTERM, as a
    pod deletion sends), TriggerRecoveryNow makes multiorch elect a new primary in the call instead of
    after its failover grace. The old primary's data directory gets standby.signal before SIGTERM, as
    the pool pod's preStop writes it: multipooler's monitor may start PostgreSQL again between the
    graceful stop and the process exit (seen in CI), and then it must come up in recovery. It rejoins
    as a standby and is never out of recovery beside the new primary."""
    primary, topo = healthy, shard.topology()
    orchs = dp.orchestrators(topo, {cell: "" for cell in topo.cells})
    assert sorted(o.cell for o in orchs) == sorted(topo.cells) and all(o.hostname and o.grpc_port for o in orchs)
    assert dp.orchestrators(topo, {cell: "not-this-shard-" for cell in topo.cells}) == []
    assert "LeaderResigned" not in " ".join(dp.trigger_recovery(orchs[0]))  # a healthy shard: nothing to do

    cell = shard.config["provisioner-config"]["cells"][primary.id.cell]
    signal_file = Path(cell["pgctld"]["pooler-dir"]) / "pg_data" / "standby.signal"
    assert not signal_file.exists()  # it runs as the primary
    signal_file.touch()  # the preStop
    os.chown(signal_file, shard.toolchain.uid, shard.toolchain.gid)
    started, asked = time.monotonic(), []
    shard.signal_pooler(primary.id.cell, signal.SIGTERM)

    def replaced() -> Pooler | None:
        leadership = dp.leadership(dp.list_poolers(topo))
        if leadership.confirmed is not None and leadership.confirmed.id != primary.id:
            return leadership.confirmed
        if not leadership.streaming:  # the agent's order: the old primary's shutdown checkpoint was sent
            asked.append(dp.trigger_recovery(orchs[0]))
        return None

    new = eventually(replaced, timeout=60, what="another confirmed primary", interval=0.2)
    note(f"SIGTERM of the primary -> new confirmed primary (multiorch asked {len(asked)} times)",
         time.monotonic() - started)

    shard.wait_pooler_gone(primary.id.cell)
    samples: list[str | None] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            samples.append(shard.psql(cell["pgctld"]["pg-port"], "SELECT pg_is_in_recovery()"))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        shard.restart_missing()
        eventually(lambda: listed(dp, new, shard.pooler(primary.id.cell)), timeout=180,
                   what=f"{primary.id} back in {new.id}'s cohort")
    finally:
        sampling.set()
        sampler.join()
    assert "f" not in samples, f"the old primary ran out of recovery: {samples}"
    assert "t" in samples


def test_graceful_stop_rewrites_the_record_unless_it_was_deleted_first(shard: ProvisionedShard, dp: V0_1,
                                                                        healthy: Pooler) -> None:
    """Last on purpose: it leaves two poolers stopped (a restart after a graceful stop makes one
    multiorch flap the pooler in and out for about a minute on stale INELIGIBLE health)."""
    primary, (kept, deleted) = healthy, replicas(dp, shard, healthy)
    etcd = Etcd(shard.etcd_endpoint)

    started = time.monotonic()
    shard.signal_pooler(kept.id.cell, signal.SIGTERM)
    note("SIGTERM of a replica -> out of the cohort", timed(lambda: not listed(dp, primary, kept), 60,
                                                             f"{kept.id} out after SIGTERM"))
    shard.wait_pooler_gone(kept.id.cell)
    note("SIGTERM of a replica -> process gone", time.monotonic() - started)
    rec = next(p for p in dp.list_poolers(shard.topology()) if p.id == kept.id)
    assert rec.stopped and rec.role is None
    assert (rec.native.type, rec.native.serving_status) == (cm.DRAINED, cm.NOT_SERVING)

    # The other one: its key goes first (what the drain's `acknowledged` step does), then SIGTERM.
    # It stays in the cohort (AT_LEAST_2 cannot lose it) but its record must not come back.
    assert etcd.delete(deleted.key)
    shard.signal_pooler(deleted.id.cell, signal.SIGTERM)
    shard.wait_pooler_gone(deleted.id.cell)
    stays(lambda: etcd.get(deleted.key) is None, 5, f"{deleted.key} was recreated by the stopping pooler")
    assert {p.id for p in dp.list_poolers(shard.topology())} == {primary.id, kept.id}
