"""The committed stubs match the .proto files, and the protos match the contract's wire facts."""

from __future__ import annotations

from multigres_pools.proto import generate
from multigres_pools.proto.gen import clustermetadata_pb2 as cm
from multigres_pools.proto.gen import multipoolermanagerdata_pb2 as mpd
from multigres_pools.proto.gen import multipoolermanagerservice_pb2 as svc


def test_committed_stubs_are_fresh() -> None:
    assert generate.stale_files() == [], "run: python -m multigres_pools.proto.generate"


def _fields(message) -> dict[str, tuple[int, int]]:
    return {f.name: (f.number, f.type) for f in message.DESCRIPTOR.fields}


def test_method_paths_are_era_a() -> None:
    service = svc.DESCRIPTOR.services_by_name["MultiPoolerManager"]
    assert service.full_name == "multipoolermanager.MultiPoolerManager"
    assert {m.name for m in service.methods} >= {
        "UpdateSynchronousStandbyList", "PrimaryStatus", "Status", "GetBackups", "Backup", "State"}


def test_pooler_record_field_numbers() -> None:
    f = _fields(cm.MultiPooler)
    T = cm.MultiPooler.DESCRIPTOR.fields_by_name["id"].TYPE_MESSAGE
    assert f["id"] == (1, T)
    assert [f[n][0] for n in ("database", "table_group", "shard", "key_range", "type", "serving_status",
                              "hostname", "port_map", "pooler_dir", "pg_data_dir")] == list(range(2, 12))
    assert cm.PoolerType.Value("DRAINED") == 3
    assert _fields(cm.ID)["name"][0] == 3


def test_update_sync_request_field_numbers() -> None:
    f = _fields(mpd.UpdateSynchronousStandbyListRequest)
    assert {n: f[n][0] for n in f} == {"operation": 1, "standby_ids": 2, "reload_config": 3,
                                        "consensus_term": 4, "force": 5, "coordinator_id": 6}
    assert mpd.STANDBY_UPDATE_OPERATION_REMOVE == 2
    assert _fields(mpd.PrimaryStatus)["sync_replication_config"][0] == 4
    assert _fields(mpd.SynchronousReplicationConfiguration)["standby_ids"][0] == 4
    assert _fields(mpd.BackupRequest)["overrides"][0] == 10


def test_known_bytes_round_trip() -> None:
    """Hand-encoded bytes of an ID {component=1, cell="zone1", name="p-1"} decode as the contract says."""
    raw = b"\x08\x01\x12\x05zone1\x1a\x03p-1"
    ident = cm.ID.FromString(raw)
    assert (ident.component, ident.cell, ident.name) == (cm.ID.MULTIPOOLER, "zone1", "p-1")
    assert ident.SerializeToString() == raw


def test_v0_1_stubs_live_beside_era_a_in_one_process() -> None:
    """Our v0.1.0 subset registers its own file names and package, so both sets load together."""
    from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm1
    from multigres_pools.proto.gen.v0_1 import consensusdata_pb2 as cd1
    from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd1

    assert cm.MultiPooler.DESCRIPTOR.full_name == "clustermetadata.MultiPooler"
    assert cm1.MultiPooler.DESCRIPTOR.full_name == "mgpools.v0_1.clustermetadata.MultiPooler"
    assert cm1.DESCRIPTOR.name == "v0_1/clustermetadata.proto" != cm.DESCRIPTOR.name
    assert not cm1.DESCRIPTOR.services_by_name and not mpd1.DESCRIPTOR.services_by_name
    assert {f.name: f.number for f in cd1.StatusResponse.DESCRIPTOR.fields} == {
        "id": 4, "consensus_status": 11, "availability_status": 12}


def test_v0_1_field_numbers() -> None:
    """The wire facts of shared/reference/multigres-v0.1.md §1.2-§1.3 and §3."""
    from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm1
    from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd1

    T = cm1.MultiPooler.DESCRIPTOR.fields_by_name["id"].TYPE_MESSAGE
    rec = _fields(cm1.MultiPooler)
    assert rec["shard_key"] == (2, T) and "database" not in rec
    assert [rec[n][0] for n in ("key_range", "type", "serving_status", "hostname", "port_map", "pooler_dir",
                                "pg_data_dir")] == list(range(5, 12))
    assert _fields(cm1.ShardKey) == {k: (v, _fields(cm1.ShardKey)[k][1]) for k, v in
                                     (("database", 1), ("table_group", 2), ("shard", 3))}
    assert {n: v[0] for n, v in _fields(mpd1.UpdateConsensusRuleRequest).items()} == {
        "operation": 1, "standby_ids": 2, "expected_outgoing_rule": 4, "coordinator_id": 6}
    assert mpd1.COHORT_UPDATE_OPERATION_REMOVE == 2 and mpd1.REPLICATION_PAUSE_MODE_RECEIVER_ONLY == 1
    assert {n: v[0] for n, v in _fields(mpd1.StatusResponse).items()} == {
        "status": 1, "availability_status": 3, "consensus_status": 4}
    status = _fields(mpd1.Status)
    assert (status["postgres_status"][0], status["cohort_members"][0]) == (7, 13)
    assert mpd1.POSTGRES_STATUS_PRIMARY == 4 and cm1.COHORT_ELIGIBILITY_SIGNAL_INELIGIBLE == 2
    # CAS token path: StatusResponse 4 -> ConsensusStatus 2 -> PoolerPosition 1 -> ShardRule 1.
    assert (_fields(cm1.ConsensusStatus)["current_position"][0], _fields(cm1.PoolerPosition)["rule"][0],
            _fields(cm1.ShardRule)["rule_number"][0]) == (2, 1, 1)
    assert {n: v[0] for n, v in _fields(cm1.RuleNumber).items()} == {"coordinator_term": 1, "leader_subterm": 2}
    assert {n: v[0] for n, v in _fields(cm1.DurabilityPolicy).items()} == {
        "policy_name": 1, "policy_version": 2, "quorum_type": 3, "required_count": 4, "description": 5}
