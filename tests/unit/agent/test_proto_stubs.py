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
