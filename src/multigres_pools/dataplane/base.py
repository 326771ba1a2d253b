"""The data-plane adapter interface: everything the agent asks of Multigres, independent of its version.

The drain state machine, role publishing and topology code only see these types. Era A (multigres
d782aa06) is implemented in `era_a.py`; a later era becomes a second implementation of `DataPlane`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils import keys


@dataclass(frozen=True)
class ShardTopology:
    """Where a shard's poolers are registered and which records belong to it."""

    global_addresses: tuple[str, ...]
    global_root: str
    database: str
    tablegroup: str
    shard: str
    cells: tuple[str, ...]

    @property
    def key(self) -> tuple[str, ...]:
        return (",".join(self.global_addresses), self.global_root, self.database, self.tablegroup, self.shard)


@dataclass(frozen=True)
class PoolerId:
    """A pooler identity (cell + service id) as the data plane spells it."""

    cell: str
    name: str

    def __str__(self) -> str:
        return f"{self.cell}/{self.name}"


@dataclass(frozen=True)
class Pooler:
    """One pooler record. `native` keeps the decoded record so an adapter can send its ID back verbatim."""

    id: PoolerId
    role: keys.Role | None
    hostname: str
    grpc_port: int | None
    database: str
    tablegroup: str
    shard: str
    key: str
    native: Any = field(default=None, compare=False, repr=False)

    def matches_pod(self, pod_name: str) -> bool:
        """Contract §2.6: the service id is a hash, so the hostname is what ties a record to a pod."""
        return self.id.name == pod_name or self.hostname == pod_name or self.hostname.startswith(pod_name + ".")


@dataclass(frozen=True)
class SyncReplication:
    """The primary's synchronous replication configuration and connected followers (PrimaryStatus)."""

    ready: bool
    standbys: tuple[PoolerId, ...]
    connected: tuple[PoolerId, ...]

    def lists(self, pooler: PoolerId) -> bool:
        return pooler in self.standbys


@dataclass(frozen=True)
class Backup:
    backup_id: str
    complete: bool
    type: str


class BackupLocationKind(StrEnum):
    FILESYSTEM = "filesystem"
    S3 = "s3"


@dataclass(frozen=True)
class DatabaseRegistration:
    """What the global topology needs to know about the database (contract §2.7)."""

    name: str
    cells: tuple[str, ...]
    durability_policy: str = "AT_LEAST_2"
    backup_kind: BackupLocationKind = BackupLocationKind.FILESYSTEM
    filesystem_path: str = "/backups"
    s3_bucket: str = ""
    s3_region: str = ""
    s3_endpoint: str = ""
    s3_key_prefix: str = ""
    s3_use_env_credentials: bool = False


class RefusalReason(StrEnum):
    """Why the data plane refused or could not do a step; written to the pod as the blocked reason."""

    LAST_SYNC_STANDBY = "last-sync-standby"
    PRIMARY_IN_RECOVERY = "primary-in-recovery"
    SYNC_NOT_CONFIGURED = "sync-replication-not-configured"
    PRIMARY_NOT_READY = "primary-not-ready"
    NO_PRIMARY = "no-primary"
    PRIMARY_UNREACHABLE = "primary-unreachable"
    TOPOLOGY_UNAVAILABLE = "topology-unavailable"
    INVALID_REQUEST = "invalid-request"
    UNKNOWN = "unknown-error"


class DataPlaneError(Exception):
    """A data-plane call failed; `reason` is the stable, user-visible classification."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class TopologyUnavailable(DataPlaneError):
    def __init__(self, message: str) -> None:
        super().__init__(RefusalReason.TOPOLOGY_UNAVAILABLE, message)


def find_primary(poolers: Iterable[Pooler]) -> Pooler | None:
    """The first PRIMARY record in cell order (contract §2.6 FindPrimaryPooler)."""
    ordered = sorted(poolers, key=lambda p: (p.id.cell, p.id.name))
    return next((p for p in ordered if p.role is keys.Role.PRIMARY), None)


def match_pod(poolers: Iterable[Pooler], pod_name: str) -> Pooler | None:
    return next((p for p in poolers if p.matches_pod(pod_name)), None)


class DataPlane(abc.ABC):
    """Everything the agent needs from one Multigres version. Implementations must be thread-safe."""

    supports_switchover: bool = False

    @abc.abstractmethod
    def list_poolers(self, topo: ShardTopology) -> list[Pooler]:
        """All pooler records of the shard in its cells; TopologyUnavailable if any cell cannot be read."""

    @abc.abstractmethod
    def sync_replication(self, primary: Pooler) -> SyncReplication:
        """The primary's current synchronous standby list, read from the primary itself."""

    @abc.abstractmethod
    def remove_standby(self, primary: Pooler, standby: PoolerId, native: Any = None) -> None:
        """Remove `standby` from the primary's synchronous standby list (idempotent)."""

    @abc.abstractmethod
    def unregister(self, topo: ShardTopology, pooler: PoolerId) -> bool:
        """Delete the pooler's topology record; False when it was already gone."""

    @abc.abstractmethod
    def register(self, topo: ShardTopology, database: DatabaseRegistration, overwrite: bool = True) -> list[str]:
        """Make sure the database and its cells are registered; returns what was created or changed.

        With overwrite=False an existing database record is left as it is (nothing better is known).
        """

    @abc.abstractmethod
    def unregister_database(self, topo: ShardTopology, database: str, cells: Sequence[str]) -> list[str]:
        """Remove the database record and any cell that no other database lists; returns what went."""

    @abc.abstractmethod
    def get_backups(self, primary: Pooler, limit: int) -> list[Backup]:
        """Backups in the order the pooler returns them (era A: oldest first, `limit` keeps the oldest)."""

    @abc.abstractmethod
    def take_backup(self, pooler: Pooler, backup_type: str, job_id: str, force_primary: bool = False) -> str:
        """Start a backup on `pooler`; returns the backup id."""

    def switchover(self, topo: ShardTopology, primary: Pooler, reason: str) -> None:
        """Ask the data plane to move the primary elsewhere; era A has no such API (contract §1.4)."""
        raise NotImplementedError("this Multigres version has no switchover API")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
