"""The era-A adapter against a real etcd and the multipooler test peer: records, RPCs, error cases."""

from __future__ import annotations

import grpc
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming

from multigres_pools.dataplane.base import (
    BackupLocationKind,
    DatabaseRegistration,
    DataPlaneError,
    PoolerId,
    RefusalReason,
    ShardTopology,
    TopologyUnavailable,
    find_primary,
)
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.playground.era_a_double import EMPTY_RESULT, STANDBY_MODE, MultipoolerPeer
from multigres_pools.proto.gen import clustermetadata_pb2 as cm
from multigres_pools.proto.gen import multipoolermanagerdata_pb2 as mpd
from multigres_pools.proto.gen import multipoolermanagerservice_pb2_grpc as mps


def _topo(endpoint: str, root: str, cells=("zone1",)) -> ShardTopology:
    return ShardTopology((endpoint,), root, "postgres", "default", "0-inf", tuple(cells))


@pytest.fixture
def peers():
    started: list[MultipoolerPeer] = []

    def make(pod: str, role: str = "REPLICA", cell: str = "zone1", **kw) -> MultipoolerPeer:
        peer = MultipoolerPeer(cell=cell, service_id=naming.service_id(pod), hostname=f"{pod}.hl.ns.svc",
                               role=role, **kw).start()
        started.append(peer)
        return peer

    yield make
    for peer in started:
        peer.stop()


@pytest.fixture
def era_a():
    dp = EraA(dial_host=lambda host: "127.0.0.1", rpc_timeout=3)
    yield dp
    dp.close()


def test_list_match_and_primary(private_etcd, root, peers, era_a) -> None:
    primary, replica = peers("pod-0", "PRIMARY"), peers("pod-1")
    other_shard = peers("pod-x", "PRIMARY", shard="other")
    for p in (primary, replica, other_shard):
        p.register(private_etcd.endpoint, root)
    poolers = era_a.list_poolers(_topo(private_etcd.endpoint, root))
    assert {p.id.name for p in poolers} == {naming.service_id("pod-0"), naming.service_id("pod-1")}
    found = find_primary(poolers)
    assert found is not None and found.matches_pod("pod-0") and not found.matches_pod("pod-")
    assert found.key == naming.pooler_key(root, "zone1", naming.service_id("pod-0"))
    assert found.grpc_port == primary.port and found.role is keys.Role.PRIMARY


def test_record_is_binary_protobuf_at_contract_key(private_etcd, root, peers) -> None:
    peer = peers("pod-0")
    key = peer.register(private_etcd.endpoint, root)
    assert key == f"{root}/poolers/multipooler-zone1-{naming.service_id('pod-0')}/Pooler"
    raw, _ = Etcd(private_etcd.endpoint).get(key)
    assert cm.MultiPooler.FromString(raw).hostname == "pod-0.hl.ns.svc"


def test_remove_standby_rewrites_the_list_and_is_idempotent(private_etcd, root, peers, era_a) -> None:
    primary = peers("pod-0", "PRIMARY")
    a, b = ("zone1", naming.service_id("pod-1")), ("zone1", naming.service_id("pod-2"))
    primary.set_sync_standbys([a, b])
    primary.register(private_etcd.endpoint, root)
    rec = find_primary(era_a.list_poolers(_topo(private_etcd.endpoint, root)))
    era_a.remove_standby(rec, PoolerId(*b))
    assert primary.sync_standbys() == [a]
    assert primary.synchronous_standby_names() == f'FIRST 1 ("zone1_{a[1]}")'
    assert not era_a.sync_replication(rec).lists(PoolerId(*b))
    era_a.remove_standby(rec, PoolerId(*b))  # no-op the second time
    assert primary.sync_standbys() == [a] and primary.reloads == 1
    sent = primary.calls("UpdateSynchronousStandbyList")[0]
    assert sent.operation == mpd.STANDBY_UPDATE_OPERATION_REMOVE and sent.reload_config
    assert (sent.standby_ids[0].component, sent.standby_ids[0].name) == (cm.ID.MULTIPOOLER, b[1])


@pytest.mark.parametrize(("setup", "reason"), [
    (lambda p: p.set_sync_standbys([("zone1", "p-1")]), RefusalReason.LAST_SYNC_STANDBY),
    (lambda p: p.set_sync_standbys([]), RefusalReason.SYNC_NOT_CONFIGURED),
    (lambda p: (p.set_sync_standbys([("zone1", "p-1"), ("zone1", "p-2")]), p.set_role("REPLICA")),
     RefusalReason.PRIMARY_IN_RECOVERY),
    (lambda p: p.set_manager_ready(False), RefusalReason.PRIMARY_NOT_READY),
    (lambda p: p.inject_unavailable(), RefusalReason.PRIMARY_UNREACHABLE),
])
def test_refusals_are_classified(private_etcd, root, peers, era_a, setup, reason) -> None:
    primary = peers("pod-0", "PRIMARY")
    primary.register(private_etcd.endpoint, root)
    rec = find_primary(era_a.list_poolers(_topo(private_etcd.endpoint, root)))
    setup(primary)
    with pytest.raises(DataPlaneError) as err:
        era_a.remove_standby(rec, PoolerId("zone1", "p-1"))
    assert err.value.reason is reason


def test_peer_rejects_bad_requests_like_the_server() -> None:
    with MultipoolerPeer(role="PRIMARY") as peer, grpc.insecure_channel(f"127.0.0.1:{peer.port}") as ch:
        peer.set_sync_standbys([("zone1", "p-1"), ("zone1", "p-2")])
        stub = mps.MultiPoolerManagerStub(ch)
        one = [cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name="p-1")]
        for req in (mpd.UpdateSynchronousStandbyListRequest(standby_ids=one),
                    mpd.UpdateSynchronousStandbyListRequest(operation=2)):
            with pytest.raises(grpc.RpcError) as err:
                stub.UpdateSynchronousStandbyList(req)
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        both = [*one, cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name="p-2")]
        with pytest.raises(grpc.RpcError) as err:
            stub.UpdateSynchronousStandbyList(mpd.UpdateSynchronousStandbyListRequest(operation=2, standby_ids=both))
        assert err.value.details() == EMPTY_RESULT
        peer.set_role("REPLICA")
        with pytest.raises(grpc.RpcError) as err:
            stub.PrimaryStatus(mpd.PrimaryStatusRequest())
        assert (err.value.code(), err.value.details()) == (grpc.StatusCode.FAILED_PRECONDITION, STANDBY_MODE)
        assert stub.Status(mpd.StatusRequest()).status.postgres_role == "standby"


def test_get_backups_limit_keeps_the_oldest_and_backup_rules(private_etcd, root, peers, era_a) -> None:
    primary = peers("pod-0", "PRIMARY")
    primary.register(private_etcd.endpoint, root)
    for i in range(5):
        primary.add_backup(f"2026010{i + 1}-010000F")
    rec = find_primary(era_a.list_poolers(_topo(private_etcd.endpoint, root)))
    assert [b.backup_id for b in era_a.get_backups(rec, 2)] == ["20260101-010000F", "20260102-010000F"]
    assert len(era_a.get_backups(rec, 0)) == 5
    with pytest.raises(DataPlaneError):
        era_a.take_backup(rec, "full", "20260201-000000.000001")  # primary without force_primary
    with pytest.raises(DataPlaneError) as err:
        era_a.take_backup(rec, "weekly", "20260201-000000.000001", force_primary=True)
    assert err.value.reason is RefusalReason.INVALID_REQUEST
    assert era_a.take_backup(rec, "full", "20260201-000000.000001", force_primary=True) == "20260201-000000F"


def test_register_database_and_cells(private_etcd, root, era_a) -> None:
    topo = _topo(private_etcd.endpoint, root, ("zone1", "zone2"))
    db = DatabaseRegistration("postgres", ("zone1", "zone2"), "MULTI_CELL_AT_LEAST_2", BackupLocationKind.S3,
                              s3_bucket="b", s3_region="r", s3_use_env_credentials=True)
    assert era_a.register(topo, db) == ["cell zone1 registered", "cell zone2 registered",
                                        "database postgres registered"]
    assert era_a.register(topo, db) == []  # nothing to write the second time
    etcd = Etcd(private_etcd.endpoint)
    rec = cm.Database.FromString(etcd.get(naming.database_key(root, "postgres"))[0])
    assert list(rec.cells) == ["zone1", "zone2"] and rec.backup_location.s3.bucket == "b"
    assert (rec.bootstrap_durability_policy.quorum_type, rec.bootstrap_durability_policy.required_count) == (4, 2)
    cell = cm.Cell.FromString(etcd.get(naming.cell_key(root, "zone1"))[0])
    assert (list(cell.server_addresses), cell.root) == ([private_etcd.endpoint], root)
    fs = DatabaseRegistration("postgres", ("zone1",))
    assert era_a.register(topo, fs, overwrite=False) == []
    assert era_a.register(topo, fs) == ["database postgres updated"]
    rec = cm.Database.FromString(etcd.get(naming.database_key(root, "postgres"))[0])
    assert rec.backup_location.filesystem.path == "/backups" and list(rec.cells) == ["zone1", "zone2"]
    assert era_a.unregister_database(topo, "postgres", ["zone1", "zone2"]) == [
        "database postgres unregistered", "cell zone1 unregistered", "cell zone2 unregistered"]


def test_cell_record_points_at_its_own_root(private_etcd, root, peers, era_a) -> None:
    """ConnForCell: a Cell record with its own root moves where the cell's poolers live."""
    etcd = Etcd(private_etcd.endpoint)
    etcd.put(naming.cell_key(root, "zone1"),
             cm.Cell(name="zone1", server_addresses=[private_etcd.endpoint], root=root + "-zone1").SerializeToString())
    peers("pod-0", "PRIMARY").register(private_etcd.endpoint, root + "-zone1")
    assert [p.id.name for p in era_a.list_poolers(_topo(private_etcd.endpoint, root))] == [naming.service_id("pod-0")]
    etcd.delete(naming.pooler_key(root + "-zone1", "zone1", naming.service_id("pod-0")))


def test_etcd_down_is_topology_unavailable(era_a) -> None:
    from multigres_pools.playground.cluster import free_port

    with pytest.raises(TopologyUnavailable):
        era_a.list_poolers(_topo(f"http://127.0.0.1:{free_port()}", "/multigres/global"))
