"""One round of v0.1.0 Status calls gives the status screen who leads and each pooler's WAL position,
or the address that did not answer. Real gRPC servers on 127.0.0.1 speak the v0.1.0 wire format."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import grpc
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.dataplane.base import DataPlaneError, Pooler, PoolerId, PoolerStatus, RefusalReason
from multigres_pools.dataplane.v0_1 import V0_1, pooler_status, postgres_down_s
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from tests.helpers import v01_pooler

PRIMARY = mpd.POSTGRES_STATUS_PRIMARY


def _pooler(name: str, port: int) -> Pooler:
    return Pooler(PoolerId("zone1", name), keys.Role.REPLICA, f"{name}.hl.ns.svc", port, "postgres", "default",
                  "0-inf", f"/k/{name}")


@pytest.fixture
def servers() -> Iterator[list[tuple[grpc.Server, int]]]:
    started = [v01_pooler.serve(v01_pooler.answer("p-a", "p-a", PRIMARY, lsn="0/5000060")),
               v01_pooler.serve(v01_pooler.answer("p-b", "p-a", mpd.POSTGRES_STATUS_STANDBY, replay="0/5000000",
                                                  receive="0/5000060"))]
    yield started
    for server, _ in started:
        server.stop(None)


def test_one_status_round_names_the_leader_positions_and_the_address_that_failed(servers) -> None:
    with socket.socket() as closed:  # bound, never listening: refused
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
        plane = V0_1(rpc_timeout=3, dial_host=lambda host: "127.0.0.1")
        try:
            poolers = [_pooler("p-a", servers[0][1]), _pooler("p-b", servers[1][1]), _pooler("p-c", dead)]
            survey = plane.survey(poolers)
            assert plane.leadership(poolers) == survey.leadership
        finally:
            plane.close()
    assert survey.leadership.confirmed == poolers[0]
    got = {s.id.name: s for s in survey.poolers}
    assert got["p-a"] == PoolerStatus(PoolerId("zone1", "p-a"), f"127.0.0.1:{servers[0][1]}", primary=True,
                                      lsn="0/5000060")
    assert got["p-b"] == PoolerStatus(PoolerId("zone1", "p-b"), f"127.0.0.1:{servers[1][1]}", lsn="0/5000000",
                                      received_lsn="0/5000060")
    assert got["p-c"].address == f"127.0.0.1:{dead}" and got["p-c"].error.startswith("UNAVAILABLE")


def test_an_address_that_answers_as_another_pooler_is_no_answer_from_this_one(servers) -> None:
    """A pod IP reused by another pod, or a stale name, must not lend its Status to the pooler asked:
    p-b's server at the address p-a's record points to is p-a not answering, and p-a is no leader."""
    plane = V0_1(rpc_timeout=3, dial_host=lambda host: "127.0.0.1")
    try:
        impostor = _pooler("p-a", servers[1][1])
        with pytest.raises(DataPlaneError, match=f"the address of p-a.hl.ns.svc:{servers[1][1]} answered as "
                                                 "pooler zone1/p-b, not zone1/p-a") as refused:
            plane.status(impostor)
        assert refused.value.reason is RefusalReason.POOLER_UNREACHABLE
        survey = plane.survey([impostor, _pooler("p-b", servers[1][1])])
    finally:
        plane.close()
    assert survey.leadership.confirmed is None
    assert survey.leadership.in_recovery == {PoolerId("zone1", "p-b")}
    assert "answered as pooler zone1/p-b" in {s.id.name: s for s in survey.poolers}["p-a"].error


def test_a_status_without_a_position_field_falls_back_to_the_wal_position() -> None:
    ident = PoolerId("zone1", "p-a")
    standby = mpd.StatusResponse(status=mpd.Status(postgres_status=mpd.POSTGRES_STATUS_STANDBY,
                                                   wal_position="0/3000000"))
    assert pooler_status(ident, "h:1", standby) == PoolerStatus(ident, "h:1", lsn="0/3000000")
    primary = mpd.StatusResponse(status=mpd.Status(postgres_status=PRIMARY, wal_position="0/4000000"))
    assert pooler_status(ident, "h:1", primary) == PoolerStatus(ident, "h:1", primary=True, lsn="0/4000000")
    failed = DataPlaneError(RefusalReason.POOLER_UNREACHABLE, "DEADLINE_EXCEEDED: ")
    assert pooler_status(ident, "", failed) == PoolerStatus(ident, "", error="DEADLINE_EXCEEDED: ")


def test_a_pooler_starting_a_postgres_whose_process_is_gone_says_for_how_long() -> None:
    ident = PoolerId("zone1", "p-b")
    status = mpd.Status(postgres_status=mpd.POSTGRES_STATUS_UNKNOWN, postgres_action=mpd.POSTGRES_ACTION_STARTING,
                        postgres_running=False)
    status.postgres_action_duration.FromSeconds(185)
    assert pooler_status(ident, "h:1", mpd.StatusResponse(status=status)).starting_dead_s == 185.0
    status.postgres_running = True  # starting, and the process is there: a start in progress
    assert pooler_status(ident, "h:1", mpd.StatusResponse(status=status)).starting_dead_s == 0.0



def test_postgres_is_down_when_it_does_not_run_and_no_restore_is_under_way() -> None:
    """What the agent's stuck-start watch reads (agent/stuck_start.py): a start that hangs says for how
    long; a PostgreSQL that is simply not running (a diverged old primary failing every start) is down
    for a time the pooler does not know; a restore or a running server is not down."""
    status = mpd.Status(postgres_status=mpd.POSTGRES_STATUS_UNKNOWN, postgres_action=mpd.POSTGRES_ACTION_STARTING)
    status.postgres_action_duration.FromSeconds(95)
    assert postgres_down_s(status) == 95.0
    assert postgres_down_s(mpd.Status(postgres_status=mpd.POSTGRES_STATUS_UNKNOWN)) == 0.0
    assert postgres_down_s(mpd.Status(postgres_action=mpd.POSTGRES_ACTION_RESTORING_FROM_BACKUP)) is None
    assert postgres_down_s(mpd.Status(postgres_status=mpd.POSTGRES_STATUS_STANDBY, postgres_running=True)) is None
