"""What era A and v0.1.0 share: the etcd topology (keys, cell indirection, Cell/Database records) and
the plaintext gRPC channels to poolers.

Facts (shared/reference/multigres-contract.md §2.2-§2.7; multigres-v0.1.md §3): the key layout, cell
roots (ConnForCell), binary protobuf values and ModRevision CAS are the same in both versions, and the
Cell and Database records are wire-identical (v0.1.0 only dropped DurabilityPolicy field 6, which we
never write). Only the pooler record differs, so each version supplies `decode_pooler` and
`foreign_record` (does a record that is not ours belong to this shard in the other version's schema?).
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Sequence

import grpc
from ansible_collections.multigres.pools.plugins.module_utils.core import naming
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from ..proto.gen import clustermetadata_pb2 as cm
from .base import (
    BackupLocationKind,
    DatabaseRegistration,
    DataPlane,
    DataPlaneError,
    Pooler,
    PoolerId,
    RefusalReason,
    ShardTopology,
    VersionMismatch,
)
from .etcd import DEFAULT_TIMEOUT_S, Etcd, EtcdPool, EtcdTLS, parse_address
from .grpc_tls import GrpcTLS, open_channel


def durability_policy(name: str) -> cm.DurabilityPolicy:
    """'AT_LEAST_<n>' / 'MULTI_CELL_AT_LEAST_<n>' as the Go operator encodes them (contract §2.7)."""
    try:
        multi_cell, n = model.durability_need(name)
    except ValueError:
        raise DataPlaneError(RefusalReason.INVALID_REQUEST, f"durability policy {name!r} is not supported") from None
    quorum = cm.QUORUM_TYPE_MULTI_CELL_AT_LEAST_N if multi_cell else cm.QUORUM_TYPE_AT_LEAST_N
    return cm.DurabilityPolicy(policy_name=name, quorum_type=quorum, required_count=n)


def backup_location(db: DatabaseRegistration) -> cm.BackupLocation:
    if db.backup_kind is BackupLocationKind.S3:
        return cm.BackupLocation(s3=cm.S3Backup(
            bucket=db.s3_bucket, region=db.s3_region, endpoint=db.s3_endpoint,
            key_prefix=db.s3_key_prefix, use_env_credentials=db.s3_use_env_credentials,
        ))
    return cm.BackupLocation(filesystem=cm.FilesystemBackup(path=db.filesystem_path or "/backups"))


def in_shard(pooler: Pooler, topo: ShardTopology) -> bool:
    return (pooler.id.cell in topo.cells and pooler.database == topo.database
            and pooler.tablegroup == topo.tablegroup and pooler.shard == topo.shard)


class EtcdTopologyPlane(DataPlane):
    """The etcd half of a DataPlane plus a channel cache; subclasses add the pooler RPCs."""

    def __init__(self, etcd_tls: EtcdTLS | None = None, etcd_timeout: float = DEFAULT_TIMEOUT_S,
                 rpc_timeout: float = 10.0, dial_host: Callable[[str], str] | None = None,
                 grpc_tls: GrpcTLS | None = None) -> None:
        self._etcd = EtcdPool(etcd_tls, etcd_timeout)
        self._grpc_tls = grpc_tls
        # Maps a record's hostname to the host to dial; identity in a cluster (DNS resolves it).
        self._dial_host = dial_host or (lambda hostname: hostname)
        self._rpc_timeout = rpc_timeout
        self._channels: dict[str, grpc.Channel] = {}
        # (hostname, port) -> the target last dialed for it: a replaced pod's new IP retires the old channel.
        self._dialed: dict[tuple[str, int | None], str] = {}
        self._lock = threading.Lock()

    # --- per version ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def decode_pooler(self, key: str, raw: bytes) -> Pooler | None:
        """The record in this version's schema; None when it cannot be one."""

    @abc.abstractmethod
    def foreign_record(self, raw: bytes, topo: ShardTopology) -> str | None:
        """If the record belongs to `topo` in another version's schema: a description of it, else None."""

    # --- etcd --------------------------------------------------------------------------------------
    def _global(self, topo: ShardTopology) -> Etcd:
        return self._etcd.get(topo.global_addresses)

    def _cell_store(self, topo: ShardTopology, cell: str) -> tuple[Etcd, str]:
        """ConnForCell: the Cell record names the cell topo; unregistered cells use the global one."""
        found = self._global(topo).get(naming.cell_key(topo.global_root, cell))
        if found:
            rec = cm.Cell.FromString(found[0])
            if rec.server_addresses:
                dial = tuple(self._dial_address(a) for a in rec.server_addresses)
                return self._etcd.get(dial), rec.root or topo.global_root
        return self._global(topo), topo.global_root

    def _dial_address(self, address: str) -> str:
        """A cell record's etcd address, with its host mapped like a pooler's (Multigres' own local
        provisioner writes `localhost:2379`, which is the pod's view, not ours)."""
        scheme, host, port = parse_address(address)
        mapped = self._dial_host(host)
        if mapped == host:
            return address
        return f"{scheme}://{mapped}:{port}" if "://" in address else f"{mapped}:{port}"  # bare stays bare (TLS)

    def list_poolers(self, topo: ShardTopology) -> list[Pooler]:
        seen: dict[str, Pooler] = {}
        for cell in sorted(set(topo.cells)):
            store, root = self._cell_store(topo, cell)
            for key, raw in store.get_prefix(naming.poolers_prefix(root) + "/"):
                if not key.endswith("/Pooler") or key in seen:
                    continue
                pooler = self.decode_pooler(key, raw)
                if pooler is not None and in_shard(pooler, topo):
                    seen[key] = pooler
                    continue
                # A record of this shard in another version's schema: the declared version is wrong,
                # and acting on a shard whose records we cannot read would be acting blind.
                other = self.foreign_record(raw, topo)
                if other is not None:
                    raise VersionMismatch(f"{key} is {other}, not a Multigres {self.version} record")
        return list(seen.values())

    def unregister(self, topo: ShardTopology, pooler: PoolerId) -> bool:
        store, root = self._cell_store(topo, pooler.cell)
        return store.delete(naming.pooler_key(root, pooler.cell, pooler.name))

    def register(self, topo: ShardTopology, database: DatabaseRegistration, overwrite: bool = True) -> list[str]:
        store, root = self._global(topo), topo.global_root
        changes = []
        for cell in sorted(set(database.cells)):
            # Cells are created once and never rewritten (contract §2.7).
            record = cm.Cell(name=cell, server_addresses=list(topo.global_addresses), root=root)
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
    def dial_target(self, pooler: Pooler) -> str:
        """host:port this adapter dials for the pooler; empty when its record publishes no gRPC address."""
        return self._target(pooler.hostname, pooler.grpc_port)

    def _target(self, hostname: str, grpc_port: int | None) -> str:
        return f"{self._dial_host(hostname)}:{grpc_port}" if hostname and grpc_port else ""

    def _channel(self, pooler: Pooler, unreachable: RefusalReason = RefusalReason.PRIMARY_UNREACHABLE) -> grpc.Channel:
        return self._channel_to(f"pooler {pooler.id}", pooler.hostname, pooler.grpc_port, unreachable)

    def _channel_to(self, who: str, hostname: str, grpc_port: int | None, unreachable: RefusalReason) -> grpc.Channel:
        """One cached channel per address, to the host the record names (mapped by dial_host). When the
        mapping moves (a replaced pod's new IP), the channel to the old address is closed: nothing else
        dials it, and a channel per incarnation would pile up."""
        target = self._target(hostname, grpc_port)
        if not target:
            raise DataPlaneError(unreachable, f"{who} publishes no grpc address")
        with self._lock:
            before = self._dialed.get((hostname, grpc_port))
            self._dialed[(hostname, grpc_port)] = target
            if before is not None and before != target and before not in self._dialed.values():
                old = self._channels.pop(before, None)
                if old is not None:
                    old.close()  # an RPC still on it ends CANCELLED: an answer from a pod that is gone
            channel = self._channels.get(target)
            if channel is None:
                channel = self._channels[target] = open_channel(target, hostname, self._grpc_tls)
        return channel

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._dialed.clear()
