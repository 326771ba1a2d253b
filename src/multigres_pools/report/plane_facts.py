"""The data plane's half of the report, pure: what the topology and the poolers answered (`Answers`,
which `plane_ask` collects) merged into the report's pods, replication, backups and data-plane view."""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import STUCK_START_S, Backup, Pooler, PoolerId, Survey, SyncReplication
from . import units
from .model import PodRow, PoolerProblem, Replication, Report, RepositoryBackup, Sync

BACKUPS_SHOWN = 5


@dataclass
class Answers:
    error: str = ""  # the data plane could not be asked at all (topology unreadable, no address, ...)
    poolers: list[Pooler] = field(default_factory=list)  # the topology's records
    survey: Survey | None = None
    sync: SyncReplication | None = None
    sync_error: str = ""
    backups: list[Backup] = field(default_factory=list)
    backups_error: str = ""


def hint(dial_pod_ips: bool) -> str:
    """What to try when the poolers or the topology do not answer from here."""
    if dial_pod_ips:
        return "the pod IPs are not reachable from here: run it on a node or in a pod of the cluster"
    return ("if those names resolve here but not to the pods, try --dial-pod-ips; outside the pod network, "
            "run it on a node or in a pod of the cluster")


def _name(pooler: PoolerId) -> str:
    return f"{pooler.cell}_{pooler.name}"


def merge(report: Report, answers: Answers, dial_pod_ips: bool) -> None:
    """Fills the data plane's facts into `report` (whose pods come from the API server)."""
    view = report.data_plane
    if answers.error:
        view.error, view.hint = answers.error, hint(dial_pod_ips)
        return
    statuses = answers.survey.poolers if answers.survey else ()
    failed = [PoolerProblem(_name(s.id), report.pod_of(_name(s.id)), s.address, s.error)
              for s in statuses if s.error]
    if statuses and len(failed) == len(statuses):
        view.error = "no pooler answered: " + "; ".join(
            f"{f.pod} at {f.address or '(no address published)'}: {f.error}" for f in failed)
        view.hint = hint(dial_pod_ips)
        return
    view.reached, view.unanswered = True, failed  # others answered: the network is fine, those poolers are not
    _replication(report, answers)
    view.problems = [f"{what}: {error}" for what, error in (("synchronous replication", answers.sync_error),
                                                            ("backups", answers.backups_error)) if error]
    stuck = [s for s in statuses if not s.error and s.starting_dead_s >= STUCK_START_S]
    view.stuck_starts = [report.pod_of(_name(s.id)) for s in stuck]
    view.problems += [_stuck_start(pod, s.starting_dead_s) for pod, s in zip(view.stuck_starts, stuck, strict=True)]
    _positions(report.pods, answers.survey)
    listed = [RepositoryBackup(b.backup_id, b.type, b.complete, b.size_bytes, b.final_lsn) for b in answers.backups]
    report.backups.repository, report.backups.repository_total = listed[-BACKUPS_SHOWN:], len(listed)
    report.backups.first_recoverable = next((b for b in listed if b.complete), None)
    report.backups.repository_error = answers.backups_error


def _stuck_start(pod: str, seconds: float) -> str:
    return (f"pod {pod}: its multipooler has been starting PostgreSQL for {units.duration(seconds)} and "
            "PostgreSQL is not running; Multigres v0.1.0 does not start it again after it died twice, so the "
            "agent has the pod drained and recreated on its volume (event PostgresStuck): see why it died "
            "(a full volume?) (docs/operations.md, \"PostgreSQL stays down in a pool pod\")")


def _replication(report: Report, answers: Answers) -> None:
    leadership = answers.survey.leadership if answers.survey else None
    leader = leadership.confirmed if leadership else None
    if leadership is None or leader is None:
        named = leadership.named if leadership else None
        report.replication = Replication(named_leader=report.pod_of(_name(named)) if named else "")
        for pod in report.pods:
            pod.sync = Sync.UNKNOWN
        return
    primary = report.pod_of(_name(leader.id))
    if primary == _name(leader.id):  # no pod carries that pooler's identity: the registered hostname does
        primary = leader.hostname.split(".")[0] or primary
    # A walsender row is not streaming: a standby that says its own receiver is not does not count.
    sync = answers.sync.without(leadership.silent) if answers.sync else None
    report.replication = Replication(
        primary=primary,
        synchronous=sorted(map(_name, sync.standbys)) if sync else [],
        cohort=sorted(map(_name, sync.cohort)) if sync else [],
        durability=sync.durability if sync else None,
        durable=sync.durability.satisfied_by(m for m in sync.cohort if m == sync.leader or m in sync.connected)
        if sync and sync.durability else None)
    connected = {_name(p) for p in sync.connected} if sync else set()
    for pod in report.pods:
        if pod.name == primary:
            pod.sync = Sync.PRIMARY
        elif sync is None:
            pod.sync = Sync.UNKNOWN
        elif pod.pooler in report.replication.synchronous:
            pod.sync = Sync.SYNC if pod.pooler in connected else Sync.DETACHED
        elif pod.pooler in report.replication.cohort:
            pod.sync = Sync.COHORT
        else:
            pod.sync = Sync.ASYNC if pod.pooler in connected else Sync.NO


def _positions(pods: list[PodRow], survey: Survey | None) -> None:
    """Each pod's WAL position and, for a standby, how far its replay is behind the primary. The
    answers come from one parallel round, so a standby may read a little ahead: never below 0."""
    by_name = {_name(s.id): s for s in survey.poolers if not s.error} if survey else {}
    head = next((facts.lsn_bytes(s.lsn) for s in by_name.values() if s.primary), None)
    for pod in pods:
        status = by_name.get(pod.pooler)
        if status is None:
            continue
        pod.lsn = status.lsn
        position = facts.lsn_bytes(status.lsn)
        if not status.primary and head is not None and position is not None:
            pod.lag_bytes = max(0, head - position)
