"""How the API server's objects and the data plane's answers become the report."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.dataplane.base import Backup, Leadership, Pooler, PoolerId, PoolerStatus, Survey, SyncReplication
from multigres_pools.report import plane_facts, shard_facts, units, verdict
from multigres_pools.report.model import Sync
from multigres_pools.report.plane_facts import Answers

from . import fixtures as f
from .fixtures import name


def test_lsn_positions_sizes_and_ages() -> None:
    assert facts.lsn_bytes("0/5000060") == 0x5000060 and facts.lsn_bytes("1/0") == 1 << 32
    assert facts.lsn_bytes("") is None and facts.lsn_bytes("zz/1") is None
    assert [units.size(n) for n in (0, 1023, 1536, 23 * 2**20)] == ["0 B", "1023 B", "1.5 KiB", "23.0 MiB"]
    assert [units.duration(s) for s in (5, 119, 120, 7199, 7200, 172800)] == ["5s", "119s", "2m", "119m", "2h",
                                                                               "2d"]


def test_the_next_scheduled_backup_is_the_earliest_of_the_shard_s_schedules() -> None:
    cr = f.shard()
    assert shard_facts.backups(cr, f.NOW).next_type == "differential"  # the defaults: daily 01:00 but Sundays
    cr["spec"]["backup"] = {"schedules": {"full": "30 4 * * *", "differential": "0 6 * * *"}}
    got = shard_facts.backups(cr, f.NOW)
    assert (got.next_type, got.next_at) == ("full", dt.datetime(2026, 11, 24, 4, 30, tzinfo=dt.UTC))


def test_pods_carry_node_age_restarts_and_their_pooler_name() -> None:
    report = shard_facts.report(f.shard(), [f.pod(2), f.pod(0, "PRIMARY", restarts=3)], f.NOW)
    assert [p.name for p in report.pods] == [name(0), name(2)]
    primary = report.pods[0]
    assert (primary.node, primary.restarts, primary.pooler) == ("node-a", 3, "zone1_p-3be60fb5")
    assert primary.created == f.NOW - dt.timedelta(hours=3)


def test_sync_roles_lag_and_a_standby_that_reads_ahead() -> None:
    """A standby answering after the primary (one parallel round) may be past the primary's position:
    its lag is 0, never negative. A cohort member missing from the synchronous list reads `cohort`."""
    found = f.answers(4, 0, {0: "0/5000000", 1: "0/5000100", 2: "0/4FFF000"}, standbys=(1,), connected=(1, 2, 3))
    assert found.sync is not None
    found.sync = SyncReplication(True, found.sync.standbys, found.sync.connected,
                                 cohort=(*found.sync.cohort, f.pooler(3).id), leader=f.pooler(0).id)
    report = f.build(f.shard(), [f.pod(i, "PRIMARY" if i == 0 else "REPLICA") for i in range(4)], found)
    assert [(p.sync, p.lag_bytes) for p in report.pods] == [
        (Sync.PRIMARY, None), (Sync.SYNC, 0), (Sync.ASYNC, 0x1000), (Sync.COHORT, None)]


def test_a_synchronous_standby_that_does_not_stream_is_detached_and_needs_attention() -> None:
    """Seen on real v0.1.0: a standby promoted by hand and recreated on its volume is back in recovery
    and still listed in synchronous_standby_names, but its timeline diverged and it never streams."""
    found = f.answers(3, 0, {0: "0/5000000", 1: "0/5000000", 2: "0/6000000"}, standbys=(1, 2), connected=(1,))
    report = f.build(f.shard(), [f.pod(i, "PRIMARY" if i == 0 else "REPLICA") for i in range(3)], found)
    assert [p.sync for p in report.pods] == [Sync.PRIMARY, Sync.SYNC, Sync.DETACHED]
    assert f"pod {report.pods[2].name}: {verdict.DETACHED}" in verdict.attention(report)


def test_a_listed_standby_whose_own_receiver_does_not_stream_is_detached_though_the_primary_lists_it() -> None:
    """v0.1.0's primary reports every pg_stat_replication row as a connected follower, so a standby whose
    WAL receiver reconnects and fails each time still shows there for a moment (CI, 2026-11-28: listed,
    `async`, never streaming). Its own Status says its receiver is not streaming: detached, and the
    durability policy (2 of the cohort) rests on the primary and the one standby that streams."""
    found = f.answers(3, 0, {0: "0/5000000", 1: "0/5000000", 2: "0/4000000"}, standbys=(1, 2), connected=(1, 2))
    assert found.survey is not None
    pods = [f.pod(i, "PRIMARY" if i == 0 else "REPLICA") for i in range(3)]
    standbys = frozenset({f.pooler(1).id, f.pooler(2).id})

    def said(streaming: frozenset[PoolerId], in_recovery: frozenset[PoolerId] = standbys) -> Answers:
        assert found.survey is not None
        leadership = replace(found.survey.leadership, in_recovery=in_recovery, streaming=streaming)
        return replace(found, survey=replace(found.survey, leadership=leadership))

    # Both stream, or the standbys said nothing of themselves (era A, no answer): the rows count.
    for answered in (said(standbys), said(frozenset(), frozenset())):
        assert [p.sync for p in f.build(f.shard(), pods, answered).pods] == [Sync.PRIMARY, Sync.SYNC, Sync.SYNC]
    report = f.build(f.shard(), pods, said(frozenset({f.pooler(1).id})))
    assert [p.sync for p in report.pods] == [Sync.PRIMARY, Sync.SYNC, Sync.DETACHED]
    assert f"pod {report.pods[2].name}: {verdict.DETACHED}" in verdict.attention(report)
    assert report.replication.durable is True
    assert f.build(f.shard(), pods, said(frozenset())).replication.durable is False


def test_a_primary_no_pod_carries_is_named_by_its_registered_hostname() -> None:
    """A pod whose pooler flags are gone (or another shard's) still maps through the record's hostname."""
    stranger = PoolerStatus(PoolerId("zone1", "p-elsewhere"), "10.0.0.9:15270", primary=True, lsn="0/1")
    leader = Pooler(PoolerId("zone1", "p-elsewhere"), keys.Role.PRIMARY, "other-0.hl.play.svc", 15270, "postgres",
                    "default", "0-inf", "/k")
    found = Answers(poolers=[leader], survey=Survey(Leadership(leader, leader.id), (stranger,)))
    report = f.build(f.shard(), [f.pod(1)], found)
    assert report.replication.primary == "other-0" and report.pods[0].sync is Sync.UNKNOWN


def test_the_first_recoverable_point_is_the_oldest_complete_backup_even_past_those_shown() -> None:
    found = f.answers(1, 0, {})
    found.backups = [Backup("20261101-010001F", False, "full"), Backup("20261102-010001F", True, "full", "", 1, "0/9"),
                     *(Backup(f"2026111{i}-010001D", True, "diff") for i in range(6))]
    report = f.build(f.shard(), [f.pod(0, "PRIMARY")], found)
    backups = report.backups
    assert backups.first_recoverable is not None and backups.first_recoverable.id == "20261102-010001F"
    assert len(backups.repository) == plane_facts.BACKUPS_SHOWN and backups.repository_total == 8


def test_a_topology_that_cannot_be_read_leaves_everything_unknown() -> None:
    report = f.build(f.shard(), [f.pod(0, "PRIMARY")], Answers(error="etcd: no endpoint answered (10.0.0.1:2379: "
                                                                     "timed out)"))
    plane = report.data_plane
    assert not plane.reached and plane.error.startswith("etcd: no endpoint answered (10.0.0.1:2379")
    assert "--dial-pod-ips" in plane.hint and report.pods[0].sync is Sync.UNKNOWN


def test_a_pooler_stuck_starting_a_dead_postgres_needs_attention_after_two_minutes() -> None:
    """Seen on real v0.1.0 with a standby's volume full: PostgreSQL died twice and the multipooler's
    monitor waits for it for ever (docs/reliability.md). A start that is seconds old is not stuck."""
    found = f.answers(3, 0, {0: "0/5000000", 1: "0/5000000"}, standbys=(1, 2), connected=(1,))
    assert found.survey is not None
    stuck = replace(found.survey.poolers[2], starting_dead_s=251.0)
    found.survey = replace(found.survey, poolers=(*found.survey.poolers[:2], stuck))
    report = f.build(f.shard(), [f.pod(i, "PRIMARY" if i == 0 else "REPLICA") for i in range(3)], found)
    said = [line for line in verdict.attention(report) if "starting PostgreSQL" in line]
    assert said == [f"pod {report.pods[2].name}: its multipooler has been starting PostgreSQL for 4m and "
                    "PostgreSQL is not running; Multigres v0.1.0 does not start it again after it died twice, so "
                    "the agent has the pod drained and recreated on its volume (event PostgresStuck): see why it "
                    "died (a full volume?) (docs/operations.md, \"PostgreSQL stays down in a pool pod\")"]
    assert verdict.judge(report).state == verdict.DEGRADED  # the headline says so, not "Reconciling"
    assert f"{report.pods[2].name}: PostgreSQL is not running and its multipooler is stuck starting it" in (
        verdict.judge(report).reasons)
    found.survey = replace(found.survey, poolers=(*found.survey.poolers[:2], replace(stuck, starting_dead_s=30.0)))
    report = f.build(f.shard(), [f.pod(i, "PRIMARY" if i == 0 else "REPLICA") for i in range(3)], found)
    assert not [line for line in verdict.attention(report) if "starting PostgreSQL" in line]
