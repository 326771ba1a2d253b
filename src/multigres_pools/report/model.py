"""What `multigres-pools status` knows about one shard: plain data that `shard_facts` and `plane_facts`
fill in, `verdict` judges, and `screen` and `as_json` show."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

from ..dataplane.base import Durability


class Sync(StrEnum):
    """Where a pod stands in replication, as the confirmed primary sees it."""

    PRIMARY = "primary"  # the confirmed primary itself
    SYNC = "sync"  # listed in the primary's synchronous standbys, streaming from it
    DETACHED = "detached"  # listed in the primary's synchronous standbys, not streaming (a diverged timeline)
    COHORT = "cohort"  # in the consensus rule's cohort, not (yet) in the primary's synchronous list
    ASYNC = "async"  # streaming from the primary, not synchronous
    NO = "no"  # neither listed nor streaming
    UNKNOWN = "unknown"  # the primary could not be asked


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    since: dt.datetime | None = None


@dataclass
class PodRow:
    name: str
    pool: str
    cell: str
    phase: str
    ready: bool
    role: str  # the role label the agent published
    node: str  # "" while unscheduled
    created: dt.datetime | None
    restarts: int = 0
    pooler: str = ""  # <cell>_<service id>: how the synchronous set names it
    sync: Sync = Sync.UNKNOWN
    lsn: str = ""  # the primary's write position, a standby's replay position ("" unknown)
    lag_bytes: int | None = None  # how far a standby's replay is behind the primary's position
    drain: str = ""  # the drain-state annotation
    drain_reason: str = ""
    blocked: str = ""  # why the drain waits
    fenced: bool = False
    decommission: bool = False  # listed in spec.pools.<pool>.decommission
    terminating: bool = False

    @property
    def state(self) -> str:
        """One word or two for the STATE column: the drain, else what else holds the pod."""
        if self.drain:
            return f"{self.drain} ({self.drain_reason})" if self.drain_reason else self.drain
        if self.terminating:
            return "terminating"
        if self.decommission:
            return "decommission"
        return "fenced" if self.fenced else "-"


@dataclass
class Replication:
    primary: str | None = None  # the confirmed primary's pod
    named_leader: str = ""  # the leader the newest rule names, when none is confirmed
    synchronous: list[str] = field(default_factory=list)  # pooler names (<cell>_<service id>)
    cohort: list[str] = field(default_factory=list)
    durability: Durability | None = None
    # The primary and the cohort members streaming now meet the policy; False: every commit waits.
    durable: bool | None = None


@dataclass(frozen=True)
class BackupRun:
    """One base backup the agent started (status.backup.running / .last)."""

    type: str
    trigger: str
    pod: str
    started: dt.datetime | None
    finished: dt.datetime | None = None
    force_primary: bool = False
    backup_id: str = ""
    size_bytes: int | None = None
    error: str = ""


@dataclass(frozen=True)
class Drill:
    """One restore drill (status.backup.drill.running / .last): result "" while it runs."""

    backup_id: str
    trigger: str
    started: dt.datetime | None
    finished: dt.datetime | None = None
    result: str = ""
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class RepositoryBackup:
    id: str
    type: str
    complete: bool
    size_bytes: int = 0
    final_lsn: str = ""


@dataclass
class Backups:
    running: BackupRun | None = None
    last: BackupRun | None = None
    waiting: str = ""
    next_type: str = ""  # the schedule due next, and when
    next_at: dt.datetime | None = None
    newest_complete_at: dt.datetime | None = None  # the agent's backup health check (status.lastBackupTime)
    newest_complete_type: str = ""
    repository: list[RepositoryBackup] = field(default_factory=list)  # the newest few, oldest first
    repository_total: int = 0
    repository_error: str = ""
    first_recoverable: RepositoryBackup | None = None  # the oldest complete backup: nothing before its end
    drill_running: Drill | None = None  # restore drills (spec.backup.verify)
    drill_last: Drill | None = None
    last_verified: dt.datetime | None = None


@dataclass
class PoolerProblem:
    pooler: str
    pod: str
    address: str
    error: str


@dataclass
class DataPlaneView:
    reached: bool = False  # the topology answered and, where the version asks them, a pooler did
    error: str = ""  # why not, naming the address
    hint: str = ""  # what to try
    unanswered: list[PoolerProblem] = field(default_factory=list)  # poolers that did not answer
    problems: list[str] = field(default_factory=list)  # calls that failed once the primary was found
    stuck_starts: list[str] = field(default_factory=list)  # pods whose multipooler is stuck starting PostgreSQL


@dataclass
class Clone:
    """status.clone: a shard started from another's repository (spec.backup.cloneFrom)."""

    source: str
    state: str  # Copying, Failed, Restoring, Cloned
    message: str = ""
    leader: str = ""
    term: int | None = None
    elected: dt.datetime | None = None


@dataclass
class Report:
    shard: str
    namespace: str
    version: str  # the Multigres version the shard declares
    generation: int
    observed_generation: int | None
    phase: str
    message: str
    observed_at: dt.datetime
    conditions: list[Condition] = field(default_factory=list)
    pods: list[PodRow] = field(default_factory=list)
    replication: Replication = field(default_factory=Replication)
    backups: Backups = field(default_factory=Backups)
    data_plane: DataPlaneView = field(default_factory=DataPlaneView)
    clone: Clone | None = None

    def pod_of(self, pooler: str) -> str:
        """The pod of a pooler name, else the name itself."""
        return next((p.name for p in self.pods if p.pooler == pooler), pooler)

    def condition(self, ctype: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == ctype), None)
