"""Era-A data plane (multigres d782aa06): binary protobuf records in etcd, MultiPoolerManager over gRPC.

Facts used (shared/reference/multigres-contract.md): keys §2.2, record schemas §2.4, cell roots
§2.2 (ConnForCell), writes §2.2/§2.7, RPC semantics and error texts §1.3, plaintext gRPC to
hostname:port_map["grpc"] §1.1.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from ansible_collections.multigres.pools.plugins.module_utils import keys, model, naming

from ..proto.gen import clustermetadata_pb2 as cm
from ..proto.gen import multipoolermanagerdata_pb2 as mpd
from ..proto.gen import multipoolermanagerservice_pb2_grpc as mps
from .base import (
    Backup,
    BackupLocationKind,
    DatabaseRegistration,
    DataPlane,
    DataPlaneError,
    Pooler,
    PoolerId,
    RefusalReason,
    ShardTopology,
    SyncReplication,
)
from .etcd import DEFAULT_TIMEOUT_S, Etcd, EtcdPool, EtcdTLS

_ROLES = {cm.PRIMARY: keys.Role.PRIMARY, cm.REPLICA: keys.Role.REPLICA, cm.DRAINED: keys.Role.DRAINED}
_POLICY = re.compile(model.DURABILITY_POLICY_PATTERN)
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


def durability_policy(name: str) -> cm.DurabilityPolicy:
    """'AT_LEAST_<n>' / 'MULTI_CELL_AT_LEAST_<n>' as the Go operator encodes them (contract §2.7)."""
    m = _POLICY.match(name)
    if not m:
        raise DataPlaneError(RefusalReason.INVALID_REQUEST, f"durability policy {name!r} is not supported")
    quorum = cm.QUORUM_TYPE_MULTI_CELL_AT_LEAST_N if m.group(1) else cm.QUORUM_TYPE_AT_LEAST_N
    return cm.DurabilityPolicy(policy_name=name, quorum_type=quorum, required_count=int(m.group(2)))


def backup_location(db: DatabaseRegistration) -> cm.BackupLocation:
    if db.backup_kind is BackupLocationKind.S3:
        return cm.BackupLocation(s3=cm.S3Backup(
            bucket=db.s3_bucket, region=db.s3_region, endpoint=db.s3_endpoint,
            key_prefix=db.s3_key_prefix, use_env_credentials=db.s3_use_env_credentials,
        ))
    return cm.BackupLocation(filesystem=cm.FilesystemBackup(path=db.filesystem_path or "/backups"))


def classify_rpc_error(exc: grpc.RpcError) -> DataPlaneError:
    """Map the era-A server's codes and texts (contract §1.3) to stable refusal reasons."""
    code, text = exc.code(), exc.details() or ""
    lowered = text.lower()
    if code is grpc.StatusCode.UNAVAILABLE and "starting up" in lowered:
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


class EraA(DataPlane):
    supports_switchover = False

    def __init__(self, etcd_tls: EtcdTLS | None = None, etcd_timeout: float = DEFAULT_TIMEOUT_S,
                 rpc_timeout: float = 10.0, dial_host: Callable[[str], str] | None = None) -> None:
        self._etcd = EtcdPool(etcd_tls, etcd_timeout)
        # Maps a record's hostname to the host to dial; identity in a cluster (DNS resolves it).
        self._dial_host = dial_host or (lambda hostname: hostname)
        self._rpc_timeout = rpc_timeout
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()

    # --- etcd --------------------------------------------------------------------------------------
    def _global(self, topo: ShardTopology) -> Etcd:
        return self._etcd.get(topo.global_addresses[0])

    def _cell_store(self, topo: ShardTopology, cell: str) -> tuple[Etcd, str]:
        """ConnForCell: the Cell record names the cell topo; unregistered cells use the global one."""
        found = self._global(topo).get(naming.cell_key(topo.global_root, cell))
        if found:
            rec = cm.Cell.FromString(found[0])
            if rec.server_addresses:
                return self._etcd.get(rec.server_addresses[0]), rec.root or topo.global_root
        return self._global(topo), topo.global_root

    def list_poolers(self, topo: ShardTopology) -> list[Pooler]:
        seen: dict[str, Pooler] = {}
        for cell in sorted(set(topo.cells)):
            store, root = self._cell_store(topo, cell)
            for key, raw in store.get_prefix(naming.poolers_prefix(root) + "/"):
                if not key.endswith("/Pooler") or key in seen:
                    continue
                pooler = decode_pooler(key, raw)
                if (pooler.id.cell in topo.cells and pooler.database == topo.database
                        and pooler.tablegroup == topo.tablegroup and pooler.shard == topo.shard):
                    seen[key] = pooler
        return list(seen.values())

    def unregister(self, topo: ShardTopology, pooler: PoolerId) -> bool:
        store, root = self._cell_store(topo, pooler.cell)
        return store.delete(naming.pooler_key(root, pooler.cell, pooler.name))

    def register(self, topo: ShardTopology, database: DatabaseRegistration, overwrite: bool = True) -> list[str]:
        store, root = self._global(topo), topo.global_root
        changes = []
        for cell in sorted(set(database.cells)):
            # Era A creates cells once and never rewrites them (contract §2.7).
            record = cm.Cell(name=cell, server_addresses=[topo.global_addresses[0]], root=root)
            if store.create(naming.cell_key(root, cell), record.SerializeToString()):
                changes.append(f"cell {cell} registered")
        key = naming.database_key(root, database.name)
        while True:
            found = store.get(key)
            if found and not overwrite:
                return changes
            existing = cm.Database.FromString(found[0]) if found else cm.Database(name=database.name)
            desired = cm.Database(
                name=database.name,
                cells=sorted(set(existing.cells) | set(database.cells)),
                backup_location=backup_location(database),
                bootstrap_durability_policy=durability_policy(database.durability_policy),
            )
            if found and desired == existing:
                return changes
            blob = desired.SerializeToString()
            done = store.compare_and_put(key, blob, found[1]) if found else store.create(key, blob)
            if done:
                return [*changes, f"database {database.name} {'updated' if found else 'registered'}"]

    def unregister_database(self, topo: ShardTopology, database: str, cells: Sequence[str]) -> list[str]:
        store, root = self._global(topo), topo.global_root
        changes = []
        if store.delete(naming.database_key(root, database)):
            changes.append(f"database {database} unregistered")
        still_listed: set[str] = set()
        for key, raw in store.get_prefix(naming.topo_path(root, "databases") + "/"):
            if key.endswith("/Database"):
                still_listed.update(cm.Database.FromString(raw).cells)
        for cell in sorted(set(cells) - still_listed):
            if store.delete(naming.cell_key(root, cell)):
                changes.append(f"cell {cell} unregistered")
        return changes

    # --- gRPC --------------------------------------------------------------------------------------
    def _stub(self, pooler: Pooler) -> mps.MultiPoolerManagerStub:
        if not pooler.hostname or not pooler.grpc_port:
            raise DataPlaneError(RefusalReason.PRIMARY_UNREACHABLE, f"pooler {pooler.id} publishes no grpc address")
        target = f"{self._dial_host(pooler.hostname)}:{pooler.grpc_port}"
        with self._lock:
            channel = self._channels.get(target)
            if channel is None:
                channel = self._channels[target] = grpc.insecure_channel(target)
        return mps.MultiPoolerManagerStub(channel)

    def _rpc(self, pooler: Pooler, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub(pooler), method)(request, timeout=self._rpc_timeout)
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
            Backup(b.backup_id, b.status == mpd.BackupMetadata.COMPLETE, b.type) for b in response.backups
        ]

    def take_backup(self, pooler: Pooler, backup_type: str, job_id: str, force_primary: bool = False) -> str:
        request = mpd.BackupRequest(type=backup_type, job_id=job_id, force_primary=force_primary)
        return self._rpc(pooler, "Backup", request).backup_id

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
