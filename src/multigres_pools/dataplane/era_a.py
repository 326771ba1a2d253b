"""Era-A data plane (multigres d782aa06): binary protobuf records in etcd, MultiPoolerManager over gRPC.

Facts used (shared/reference/multigres-contract.md): keys §2.2, record schemas §2.4, cell roots
§2.2 (ConnForCell), writes §2.2/§2.7, RPC semantics and error texts §1.3, plaintext gRPC to
hostname:port_map["grpc"] §1.1. The etcd side is shared with v0.1.0 (`etcd_topology.py`).
"""

from __future__ import annotations

from typing import Any

import grpc
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from google.protobuf.message import DecodeError

from ..proto.gen import clustermetadata_pb2 as cm
from ..proto.gen import multipoolermanagerdata_pb2 as mpd
from ..proto.gen import multipoolermanagerservice_pb2_grpc as mps
from ..proto.gen.v0_1 import clustermetadata_pb2 as cm1
from .base import (
    Backup,
    DataPlaneError,
    Pooler,
    PoolerId,
    RefusalReason,
    ShardTopology,
    SyncReplication,
)
from .etcd_topology import EtcdTopologyPlane, backup_location, durability_policy  # noqa: F401 (re-exported)

_ROLES = {cm.PRIMARY: keys.Role.PRIMARY, cm.REPLICA: keys.Role.REPLICA, cm.DRAINED: keys.Role.DRAINED}
_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


def decode_pooler(key: str, raw: bytes) -> Pooler:
    rec = cm.MultiPooler.FromString(raw)
    return Pooler(
        id=PoolerId(rec.id.cell, rec.id.name),
        # UNKNOWN counts as REPLICA, as the Go operator reads it (contract §2.6).
        role=_ROLES.get(rec.type, keys.Role.REPLICA),
        hostname=rec.hostname,
        grpc_port=rec.port_map.get("grpc"),
        database=rec.database,
        tablegroup=rec.table_group,
        shard=rec.shard,
        key=key,
        native=rec,
    )


def v0_1_record_of(raw: bytes, topo: ShardTopology) -> str | None:
    """A v0.1.0 record (field 2 = ShardKey message) of this shard, which era A misreads (v0.1 §3)."""
    try:
        rec = cm1.MultiPooler.FromString(raw)
    except DecodeError:
        return None
    sk = rec.shard_key
    if rec.id.cell in topo.cells and (sk.database, sk.table_group, sk.shard) == (
            topo.database, topo.tablegroup, topo.shard):
        return f"a Multigres {keys.MultigresVersion.V0_1_0} record (shard_key in field 2)"
    return None


def classify_rpc_error(exc: grpc.RpcError) -> DataPlaneError:
    """Map the era-A server's codes and texts (contract §1.3) to stable refusal reasons."""
    code, text = exc.code(), exc.details() or ""
    lowered = text.lower()
    if code is grpc.StatusCode.UNIMPLEMENTED:
        # v0.1.0 removed every era-A method the agent calls except Status and the backup RPCs.
        reason = RefusalReason.VERSION_MISMATCH
    elif code is grpc.StatusCode.UNAVAILABLE and "starting up" in lowered:
        reason = RefusalReason.PRIMARY_NOT_READY
    elif code in _UNREACHABLE:
        reason = RefusalReason.PRIMARY_UNREACHABLE
    elif code is grpc.StatusCode.INVALID_ARGUMENT and "cannot be empty" in lowered:
        reason = RefusalReason.LAST_SYNC_STANDBY
    elif code is grpc.StatusCode.FAILED_PRECONDITION and "standby mode" in lowered:
        reason = RefusalReason.PRIMARY_IN_RECOVERY
    elif code is grpc.StatusCode.FAILED_PRECONDITION and "not configured" in lowered:
        reason = RefusalReason.SYNC_NOT_CONFIGURED
    elif code is grpc.StatusCode.FAILED_PRECONDITION and "not ready" in lowered:
        reason = RefusalReason.PRIMARY_NOT_READY
    elif code is grpc.StatusCode.INVALID_ARGUMENT:
        reason = RefusalReason.INVALID_REQUEST
    else:
        reason = RefusalReason.UNKNOWN
    return DataPlaneError(reason, f"{code.name}: {text}")


class EraA(EtcdTopologyPlane):
    version = keys.MultigresVersion.ERA_A
    supports_switchover = False

    def decode_pooler(self, key: str, raw: bytes) -> Pooler:
        return decode_pooler(key, raw)

    def foreign_record(self, raw: bytes, topo: ShardTopology) -> str | None:
        return v0_1_record_of(raw, topo)

    # --- gRPC --------------------------------------------------------------------------------------
    def _rpc(self, pooler: Pooler, method: str, request: Any, timeout_s: float | None = None) -> Any:
        try:
            stub = mps.MultiPoolerManagerStub(self._channel(pooler))
            return getattr(stub, method)(request, timeout=timeout_s or self._rpc_timeout)
        except grpc.RpcError as exc:
            raise classify_rpc_error(exc) from exc

    def sync_replication(self, primary: Pooler) -> SyncReplication:
        status = self._rpc(primary, "PrimaryStatus", mpd.PrimaryStatusRequest()).status
        cfg = status.sync_replication_config
        return SyncReplication(
            ready=status.ready,
            standbys=tuple(PoolerId(i.cell, i.name) for i in cfg.standby_ids),
            connected=tuple(PoolerId(i.cell, i.name) for i in status.connected_followers),
        )

    def remove_standby(self, primary: Pooler, standby: PoolerId, native: Any = None) -> None:
        # The ID goes back exactly as read from etcd when we have the record (contract §3.4).
        ident = native.id if isinstance(native, cm.MultiPooler) else cm.ID(
            component=cm.ID.MULTIPOOLER, cell=standby.cell, name=standby.name)
        request = mpd.UpdateSynchronousStandbyListRequest(
            operation=mpd.STANDBY_UPDATE_OPERATION_REMOVE, standby_ids=[ident], reload_config=True)
        self._rpc(primary, "UpdateSynchronousStandbyList", request)

    def get_backups(self, primary: Pooler, limit: int) -> list[Backup]:
        response = self._rpc(primary, "GetBackups", mpd.GetBackupsRequest(limit=limit))
        return [
            Backup(b.backup_id, b.status == mpd.BackupMetadata.COMPLETE, b.type, b.job_id, b.backup_size_bytes,
                   b.final_lsn)
            for b in response.backups
        ]

    def take_backup(self, pooler: Pooler, backup_type: str, job_id: str, force_primary: bool = False,
                    timeout_s: float | None = None) -> str:
        request = mpd.BackupRequest(type=backup_type, job_id=job_id, force_primary=force_primary)
        response: mpd.BackupResponse = self._rpc(pooler, "Backup", request, timeout_s)
        return response.backup_id
