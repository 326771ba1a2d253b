"""A real gRPC server on 127.0.0.1 that answers Multigres v0.1.0's Status with a fixed message, for tests
of what the adapter and the status screen read from a pooler (nothing else is served: any other call
is UNIMPLEMENTED, as from a pooler of another version)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc

from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd


def ident(name: str, cell: str = "zone1") -> cm.ID:
    return cm.ID(component=cm.ID.MULTIPOOLER, cell=cell, name=name)


def answer(name: str, leader: str, postgres: int, *, lsn: str = "", replay: str = "", receive: str = "",
           standbys: tuple[str, ...] = (), connected: tuple[str, ...] = (), required: int = 0,
           receiver: str | None = None) -> mpd.StatusResponse:
    """One pooler's Status: `leader` leads rule 2.1 with the cohort `leader` + `standbys`. A standby's WAL
    receiver (`receiver`) streams unless said otherwise ("" for none, as pg_stat_wal_receiver has no row)."""
    if receiver is None:
        receiver = "streaming" if postgres == mpd.POSTGRES_STATUS_STANDBY else ""
    rule = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=2, leader_subterm=1), leader_id=ident(leader),
                        cohort_members=[ident(n) for n in (leader, *standbys)],
                        durability_policy=cm.DurabilityPolicy(quorum_type=cm.QUORUM_TYPE_AT_LEAST_N,
                                                              required_count=required))
    primary = mpd.PrimaryStatus(lsn=lsn, ready=True, connected_followers=[ident(n) for n in connected],
                                sync_replication_config=mpd.SynchronousReplicationConfiguration(
                                    standby_ids=[ident(n) for n in (leader, *standbys)]))
    status = mpd.Status(postgres_status=postgres, primary_status=primary,
                        replication_status=mpd.StandbyReplicationStatus(last_replay_lsn=replay,
                                                                        last_receive_lsn=receive,
                                                                        wal_receiver_status=receiver))
    return mpd.StatusResponse(status=status, consensus_status=cm.ConsensusStatus(
        id=ident(name), current_position=cm.PoolerPosition(rule=rule)))


def serve(response: mpd.StatusResponse) -> tuple[grpc.Server, int]:
    """Started; the caller stops it (`server.stop(None)`)."""
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(
        lambda request, context: response, request_deserializer=mpd.StatusRequest.FromString,
        response_serializer=mpd.StatusResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "multipoolermanager.MultiPoolerManager", {"Status": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port
