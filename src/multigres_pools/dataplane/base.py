"""The data-plane adapter interface: everything the agent asks of Multigres, independent of its version.

The drain state machine, role publishing and topology code only see these types. Era A (multigres
d782aa06) is implemented in `era_a.py`, Multigres v0.1.0 in `v0_1.py`; `dataplane.for_version` picks
one from the shard's declared `keys.MultigresVersion`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

if TYPE_CHECKING:
    import datetime as dt

    from .certified_rule import Restored


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
        """The shard's identity: the endpoint order (dialling order) does not make another topology.
        `global_addresses` are normalised where they are read (podinfo), so one server has one spelling."""
        return (",".join(sorted(set(self.global_addresses))), self.global_root, self.database, self.tablegroup,
                self.shard)


@dataclass(frozen=True)
class PoolerId:
    """A pooler identity (cell + service id) as the data plane spells it."""

    cell: str
    name: str

    def __str__(self) -> str:
        return f"{self.cell}/{self.name}"


@dataclass(frozen=True)
class Pooler:
    """One pooler record. `native` keeps the decoded record so an adapter can send its ID back verbatim.

    `role` is None for a pooler that announced its own shutdown (v0.1.0 rewrites its record to
    DRAINED/NOT_SERVING on SIGTERM): it has no role until it registers again, and its data is not
    known-bad (a DRAINED role would tell the engine to discard the volume).
    """

    id: PoolerId
    role: keys.Role | None
    hostname: str
    grpc_port: int | None
    database: str
    tablegroup: str
    shard: str
    key: str
    native: Any = field(default=None, compare=False, repr=False)
    stopped: bool = False

    def matches_pod(self, pod_name: str) -> bool:
        """Contract §2.6: the service id is a hash, so the hostname is what ties a record to a pod."""
        return self.id.name == pod_name or self.hostname == pod_name or self.hostname.startswith(pod_name + ".")


@dataclass(frozen=True)
class Orchestrator:
    """A multiorch as it registers itself in its cell's topology (v0.1.0 `MultiOrch` record)."""

    cell: str
    name: str
    hostname: str
    grpc_port: int | None


@dataclass(frozen=True)
class Leadership:
    """Who leads the shard, as far as the data plane can tell.

    `confirmed` is the pooler known to be the primary now (era A: the first PRIMARY record; from
    v0.1.0 on: the pooler that leads the newest rule any pooler reports and runs postgres as primary).
    `named` is the leader that newest rule names, even when its record is gone (a primary drain deletes
    it before the pod goes) or it does not answer; None when nothing could be read.
    `writable` and `in_recovery` (v0.1.0 only) are the poolers that answered with PostgreSQL out of
    recovery and in recovery: a writable pooler that is not `named` must not serve (agent/recovery_gate.py).
    """

    confirmed: Pooler | None
    named: PoolerId | None
    writable: frozenset[PoolerId] = frozenset()
    in_recovery: frozenset[PoolerId] = frozenset()
    # v0.1.0: the standbys whose WAL receiver streams now (pg_stat_wal_receiver.status); a primary's
    # walsenders end, and its standbys stop streaming, only after its shutdown checkpoint was sent.
    streaming: frozenset[PoolerId] = frozenset()
    # v0.1.0: what each answering pooler's manager is busy with (Status.postgres_action: RESTORING or
    # FIRST_BACKUP; poolers doing nothing long-running are left out) and its WAL position (a standby's
    # replay position); agent/restore_watch.py publishes both around a restore.
    actions: Mapping[PoolerId, PostgresAction] = field(default_factory=dict, compare=False)
    positions: Mapping[PoolerId, str] = field(default_factory=dict, compare=False)
    # v0.1.0: the answering poolers whose PostgreSQL is down (not running, and no restore or first
    # backup under way), with how long its manager says it has been starting it (0: not starting it,
    # or for an unknown time). agent/stuck_start.py has a pod that stays so replaced.
    down: Mapping[PoolerId, float] = field(default_factory=dict, compare=False)

    @property
    def silent(self) -> frozenset[PoolerId]:
        """The standbys that answered in recovery and whose own WAL receiver does not stream (v0.1.0;
        era A asks no pooler, so none): whatever the primary lists, they acknowledge no commit."""
        return self.in_recovery - self.streaming


# A start takes seconds. v0.1.0's manager, once the PostgreSQL it starts has died twice, waits for it
# for ever and never starts it again (a full standby's disk), and a demoted old primary whose WAL went
# past the new primary's fork never starts as a standby (docs/reliability.md): past this many seconds
# the status screen says so and the agent has the pod replaced (--stuck-start-after).
STUCK_START_S = 120.0


class PostgresAction(StrEnum):
    """The long-running operations of a v0.1.0 pooler's manager the agent reports (Status field 11)."""

    RESTORING = "restoring"  # pgbackrest restore of the newest complete backup, on an empty data directory
    FIRST_BACKUP = "first-backup"  # no backup in the repository: initdb and the shard's first backup


@dataclass(frozen=True)
class PoolerStatus:
    """One pooler's answer to a status call, as the status screen shows it: where it was dialled, its
    WAL position, or why it did not answer (`error`)."""

    id: PoolerId
    address: str  # host:port dialled; empty when the record publishes none
    primary: bool = False  # postgres runs as primary
    lsn: str = ""  # the primary's current write position; a standby's last replayed position
    received_lsn: str = ""  # a standby's last received position
    error: str = ""
    # Seconds the pooler has been starting a PostgreSQL whose process is not running (0: it is not).
    starting_dead_s: float = 0.0


@dataclass(frozen=True)
class Survey:
    """Who leads, and what each pooler said, from one round of status calls."""

    leadership: Leadership
    poolers: tuple[PoolerStatus, ...] = ()  # empty when the adapter asks no pooler (era A reads records)


@dataclass(frozen=True)
class Durability:
    """A cohort durability policy: at least `required` poolers (or cells, for MULTI_CELL), leader included."""

    required: int
    multi_cell: bool = False

    def satisfied_by(self, members: Iterable[PoolerId]) -> bool:
        present = set(members)
        return len({m.cell for m in present} if self.multi_cell else present) >= self.required


@dataclass(frozen=True)
class SyncReplication:
    """What the primary itself says about synchronous replication.

    `standbys` are the synchronous standbys of its configuration (never the primary itself) and
    `connected` its streaming followers. From v0.1.0 on there is also the cohort of the current rule
    (leader included), the leader and the rule's durability policy; era A leaves them empty.
    """

    ready: bool
    standbys: tuple[PoolerId, ...]
    connected: tuple[PoolerId, ...]
    cohort: tuple[PoolerId, ...] = ()
    leader: PoolerId | None = None
    durability: Durability | None = None

    def without(self, silent: frozenset[PoolerId]) -> SyncReplication:
        """`connected` less the followers that say their own WAL receiver does not stream: v0.1.0's primary
        lists every walsender, even one whose standby reconnects and fails each time (Leadership.silent)."""
        return replace(self, connected=tuple(p for p in self.connected if p not in silent))

    def lists(self, pooler: PoolerId | None) -> bool:
        """Still a synchronous standby in any sense: in the configuration or in the cohort."""
        return pooler in self.standbys or pooler in self.cohort

    def durable_without(self, pooler: PoolerId | None) -> bool:
        """Would the cohort still meet its durability policy without `pooler`, counting only the leader
        and the standbys streaming right now? (Taking away a needed standby stalls every commit.)
        True when the version publishes no policy (era A refuses on the server side instead)."""
        if self.durability is None:
            return True
        live = {m for m in self.cohort if m != pooler and (m == self.leader or m in self.connected)}
        return self.durability.satisfied_by(live)


class Eligibility(StrEnum):
    """A pooler's self-reported cohort eligibility (v0.1.0 AvailabilityStatus)."""

    ELIGIBLE = "eligible"
    INELIGIBLE = "ineligible"
    UNKNOWN = "unknown"  # not reported; multiorch treats it as eligible


@dataclass(frozen=True)
class StandbyState:
    """A pooler's own view of itself, read from the pooler (not from the primary)."""

    eligibility: Eligibility
    replicating: bool  # primary_conninfo set and the WAL receiver not stopped by hand
    is_leader: bool
    # The pooler itself was told who its primary is (v0.1.0 keeps it in memory only, so not right
    # after a multipooler restart); a standby's Backup needs it to reach the primary.
    knows_primary: bool = True


@dataclass(frozen=True)
class Backup:
    backup_id: str
    complete: bool
    type: str
    job_id: str = ""
    size_bytes: int = 0
    final_lsn: str = ""  # where the backup's WAL ends: the first point it can be restored to


@dataclass(frozen=True)
class RuleChange:
    """What one certified rule change installed (a clone's first primary, v0.1.0): the agent's record."""

    term: int
    leader: PoolerId
    frozen_lsn: str
    outgoing: tuple[int, int]  # the revoked (restored) rule: coordinator term and leader subterm


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
    # From v0.1.0 on.
    DURABILITY_POLICY = "cohort-below-durability-policy"
    RULE_CONFLICT = "rule-conflict"
    POOLER_UNREACHABLE = "pooler-unreachable"
    NOT_A_REPLICA = "pooler-not-a-replica"
    ORCHESTRATOR_UNREACHABLE = "multiorch-unreachable"
    # The shard's declared Multigres version is not what etcd or the pooler speaks.
    VERSION_MISMATCH = "version-mismatch"
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


class VersionMismatch(DataPlaneError):
    """etcd or a pooler speaks another Multigres version than the one declared for the shard."""

    def __init__(self, message: str) -> None:
        super().__init__(RefusalReason.VERSION_MISMATCH, message)


def find_primary(poolers: Iterable[Pooler]) -> Pooler | None:
    """The first PRIMARY record in cell order (contract §2.6 FindPrimaryPooler)."""
    ordered = sorted(poolers, key=lambda p: (p.id.cell, p.id.name))
    return next((p for p in ordered if p.role is keys.Role.PRIMARY), None)


def match_pod(poolers: Iterable[Pooler], pod_name: str) -> Pooler | None:
    return next((p for p in poolers if p.matches_pod(pod_name)), None)


class DataPlane(abc.ABC):
    """Everything the agent needs from one Multigres version. Implementations must be thread-safe."""

    version: ClassVar[keys.MultigresVersion]
    supports_switchover: bool = False
    # Whether multiorch can be asked to act now rather than after its failover grace (v0.1.0).
    supports_recovery_trigger: bool = False
    # Whether a standby can be made to refuse cohort membership (v0.1.0 INELIGIBLE); see make_ineligible.
    supports_eligibility: bool = False
    # Whether the primary is confirmed with the poolers themselves (v0.1.0) rather than read from the
    # records' type (era A): role labels and the drain's primary test then follow `leadership`.
    confirms_leader: bool = False

    @abc.abstractmethod
    def list_poolers(self, topo: ShardTopology) -> list[Pooler]:
        """All pooler records of the shard in its cells; TopologyUnavailable if any cell cannot be read,
        VersionMismatch if one of the shard's records is written in another version's schema."""

    def leader(self, poolers: Sequence[Pooler]) -> Pooler | None:
        """The shard's primary. Era A trusts the records; later versions confirm it with the pooler."""
        return find_primary(poolers)

    def leadership(self, poolers: Sequence[Pooler]) -> Leadership:
        """The confirmed primary and the leader the newest rule names (era A: both from the records)."""
        found = self.leader(poolers)
        return Leadership(found, found.id if found is not None else None)

    def survey(self, poolers: Sequence[Pooler]) -> Survey:
        """`leadership` plus each pooler's own answer where the version asks the poolers (v0.1.0)."""
        return Survey(self.leadership(poolers))

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
    def take_backup(self, pooler: Pooler, backup_type: str, job_id: str, force_primary: bool = False,
                    timeout_s: float | None = None) -> str:
        """Take a backup on `pooler` (the RPC returns when pgBackRest is done); returns the backup id.
        `timeout_s` replaces the adapter's RPC timeout (a base backup takes longer than a status call)."""

    def standby_state(self, pooler: Pooler, timeout_s: float | None = None) -> StandbyState:
        """The pooler's own eligibility and replication state (only with supports_eligibility)."""
        raise NotImplementedError(f"Multigres {self.version} publishes no cohort eligibility")

    def make_ineligible(self, pooler: Pooler, timeout_s: float | None = None) -> None:
        """Make a standby refuse cohort membership until make_eligible (only with supports_eligibility);
        `timeout_s` replaces the adapter's RPC timeout for each call."""
        raise NotImplementedError(f"Multigres {self.version} has no cohort eligibility")

    def make_eligible(self, pooler: Pooler) -> None:
        """Undo make_ineligible (a cancelled drain)."""
        raise NotImplementedError(f"Multigres {self.version} has no cohort eligibility")

    def orchestrators(self, topo: ShardTopology, names: Mapping[str, str]) -> list[Orchestrator]:
        """The multiorchs registered in the shard's cells whose name starts with names[cell] (a
        Deployment's pod names); only with supports_recovery_trigger."""
        raise NotImplementedError(f"Multigres {self.version} has no multiorch records")

    def trigger_recovery(self, orch: Orchestrator) -> tuple[str, ...]:
        """Ask multiorch for one recovery cycle now, grace periods expired; the problems it still sees."""
        raise NotImplementedError(f"Multigres {self.version} has no TriggerRecoveryNow")

    def restored(self, poolers: Sequence[Pooler]) -> list[tuple[Pooler, Restored | DataPlaneError]]:
        """Each pooler's Status as a clone's restored pooler (certified_rule.Restored), or why it did not
        answer; poolers that announced their shutdown are left out."""
        raise self._no_clone()

    def certified_rule_change(self, topo: ShardTopology, orch: Orchestrator, poolers: Sequence[Restored], *,
                              durability: str, reason: str, now: dt.datetime, attempt: int) -> RuleChange:
        """Make `poolers` the cohort of the shard, its most advanced one the leader, through one
        multiorch (certified_rule.plan: `durability` is the bootstrap policy's name, `attempt` raises
        the term after a refused try); returns when the promotion is done."""
        raise self._no_clone()

    def _no_clone(self) -> DataPlaneError:
        return VersionMismatch(f"cloning a shard (spec.backup.cloneFrom) needs Multigres "
                               f"{keys.MultigresVersion.V0_1_0}; this shard runs {self.version}, which has no "
                               "certified rule change")

    def switchover(self, topo: ShardTopology, primary: Pooler, reason: str) -> None:
        """Ask the data plane to move the primary elsewhere; era A has no such API (contract §1.4)."""
        raise NotImplementedError("this Multigres version has no switchover API")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
