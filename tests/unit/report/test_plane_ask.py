"""What `status` asks the data plane, against a real etcd holding v0.1.0 pooler records and real gRPC
servers answering Status: the primary, each position and lag, the pooler that does not answer and
its address, and a topology that cannot be read."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import naming

from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from multigres_pools.report import plane_ask, plane_facts, shard_facts
from multigres_pools.report.model import Report, Sync
from tests.helpers import v01_pooler
from tests.unit.agent.conftest import private_etcd, root  # noqa: F401  (fixtures)

from . import fixtures as f
from .fixtures import SERVICE_IDS, name

A, B, C = SERVICE_IDS[:3]


def _record(service_id: str, port: int) -> bytes:
    return cm.MultiPooler(
        id=v01_pooler.ident(service_id), shard_key=cm.ShardKey(database="postgres", table_group="default",
                                                                shard="0-inf"),
        type=cm.REPLICA, serving_status=cm.SERVING, hostname=f"{service_id}.hl.play.svc", port_map={"grpc": port},
    ).SerializeToString()


@pytest.fixture
def closed() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def _shard(endpoint: str, topo_root: str) -> dict:
    cr = f.shard()
    cr["spec"]["globalTopoServer"] = {"address": endpoint, "rootPath": topo_root}
    return cr


def _report(endpoint: str, topo_root: str, answers: list[mpd.StatusResponse], closed: int | None = None) -> Report:
    """Pods 0..n-1 of the shard, their poolers answering `answers` in turn (and, with `closed`, one more
    whose record names a port nobody listens on): the report `status` builds from them."""
    servers = [v01_pooler.serve(answer) for answer in answers]
    etcd = Etcd(endpoint)
    ports = [port for _, port in servers] + ([closed] if closed is not None else [])
    for service_id, port in zip(SERVICE_IDS, ports, strict=False):
        etcd.put(naming.pooler_key(topo_root, "zone1", service_id), _record(service_id, port))
    cr, pods = _shard(endpoint, topo_root), [f.pod(0, "PRIMARY"), *(f.pod(i) for i in range(1, len(ports)))]
    try:
        found = plane_ask.ask(cr, pods, lambda host: "127.0.0.1", rpc_timeout=3)
    finally:
        for server, _ in servers:
            server.stop(None)
    report = shard_facts.report(cr, pods, f.NOW)
    plane_facts.merge(report, found, dial_pod_ips=False)
    return report


def test_a_standby_the_primary_lists_whose_receiver_does_not_stream_is_detached(private_etcd, root) -> None:  # noqa: F811
    """The primary counts B as a connected follower (a walsender row) while B's own Status says its WAL
    receiver is `starting`: B is detached and the cohort of 2 is not durable."""
    primary = v01_pooler.answer(A, A, mpd.POSTGRES_STATUS_PRIMARY, lsn="0/5000060", standbys=(B,), connected=(B,),
                                required=2)
    standby = v01_pooler.answer(B, A, mpd.POSTGRES_STATUS_STANDBY, replay="0/4000000", receiver="starting")
    report = _report(private_etcd.endpoint, root, [primary, standby])
    assert [p.sync for p in report.pods] == [Sync.PRIMARY, Sync.DETACHED]
    assert report.replication.durable is False


def test_a_shard_whose_third_pooler_is_down(private_etcd, root, closed) -> None:  # noqa: F811
    primary = v01_pooler.answer(A, A, mpd.POSTGRES_STATUS_PRIMARY, lsn="0/5000060", standbys=(B,), connected=(B,),
                                required=2)
    standby = v01_pooler.answer(B, A, mpd.POSTGRES_STATUS_STANDBY, replay="0/5000000", receive="0/5000060")
    report = _report(private_etcd.endpoint, root, [primary, standby], closed)
    assert report.replication.primary == name(0) and report.replication.synchronous == [f"zone1_{B}"]
    assert report.replication.durable is True
    assert [(p.sync, p.lsn, p.lag_bytes) for p in report.pods] == [
        (Sync.PRIMARY, "0/5000060", None), (Sync.SYNC, "0/5000000", 0x60), (Sync.NO, "", None)]
    plane = report.data_plane
    assert plane.reached and [(u.pod, u.address) for u in plane.unanswered] == [(name(2), f"127.0.0.1:{closed}")]
    # These servers answer Status only: GetBackups is a call that failed, said, not raised.
    assert report.backups.repository_error.startswith("UNIMPLEMENTED")


def test_a_topology_that_does_not_answer_is_named(closed) -> None:
    cr, pods = _shard(f"http://127.0.0.1:{closed}", "/multigres/global"), [f.pod(0, "PRIMARY")]
    found = plane_ask.ask(cr, pods, None, rpc_timeout=1)
    assert found.error.startswith("etcd") and f"127.0.0.1:{closed}" in found.error
