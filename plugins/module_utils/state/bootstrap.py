"""The bootstrap guard: a shard that had backups never starts anew over an empty repository.

Multigres v0.1.0 decides alone what a multipooler on an empty data directory does: restore the
newest complete backup of the repository, or, when there is none, initdb and take a first backup,
i.e. a new, empty shard that turns Ready without a row of the old one (measured in
tests/integration/multigres/repository/test_restore_on_multigres.py). Nothing in v0.1.0 can tell an emptied or
wrong repository from a new shard, so the pool pod is told, and checks before PostgreSQL can start:

- spec.backup.bootstrap (keys.Bootstrap) states the intent; `auto` resolves to `recovery` once the
  shard recorded a backup: status.backup.last.backupId on the MultigresShard, or the annotation
  keys.ANN_BACKUP_RECORDED the planner keeps on the filesystem backup PVC (which outlives the shard
  with whenDeleted Retain, the default), and to `initdb` before.
- The resolved value is the pod annotation keys.ANN_BOOTSTRAP (the planner patches it in place, it is
  no part of the spec hash), read by the first init container, keys.REPOSITORY_CHECK_CONTAINER,
  through the downward API when it starts (on a data directory that ran before it only writes the
  standby signal, render/pool_v0_1.py). On a data directory without PG_VERSION and a value other
  than `initdb`, it runs `pgbackrest info` on the repository, mounted read-only, and exits
  EXIT_NO_BACKUP when it lists no backup (EXIT_UNREADABLE when pgbackrest fails): the kubelet
  restarts it with back-off and pgctld, PostgreSQL and multipooler never start. Nothing is written.
- The engine turns those exit codes into the condition BootstrapRefused (and its events), naming the
  pods, why a backup is expected and what to do.

Pure: everything here reads manifests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core import keys
from ..core.conditions import shard_condition
from ..core.manifest import Manifest
from . import facts
from .desired import BootstrapGuard as Guard
from .observed import Observed

EXIT_NO_BACKUP = 3
EXIT_UNREADABLE = 4
ENV_BOOTSTRAP = "BOOTSTRAP"
REASON_NO_BACKUP = "NoBackupInRepository"
REASON_UNREADABLE = "RepositoryUnreadable"
REASON_ALLOWED = "NoneRefused"


def label_stamp(backup_id: str) -> str:
    """The time in a pgBackRest backup label, `YYYYMMDD-HHMMSS` (sorts as it reads): its last timestamp,
    since a differential's or incremental's label `<full>_<time>D` starts with its full's."""
    return backup_id.split("_")[-1][:15]


def recorded_backup(cr: Manifest | None, backup_pvc: Manifest | None) -> str | None:
    """What proves the shard had a complete backup, or None: the backup id of the last backup the
    agent ran (status.backup.last), else the newest complete backup its health check saw
    (status.lastBackupTime: also v0.1.0's own first backup), else the backup PVC's mark."""
    status = (cr or {}).get("status") or {}
    last = (status.get("backup") or {}).get("last") or {}
    if isinstance(last, dict) and last.get("backupId"):
        return str(last["backupId"])
    if status.get("lastBackupTime"):
        return f"{status.get('lastBackupType') or 'a'} backup of {status['lastBackupTime']}"
    return facts.annotations(backup_pvc).get(keys.ANN_BACKUP_RECORDED) or None if backup_pvc else None


def guard_evidence(guard: Guard | None, observed: Observed) -> str | None:
    """recorded_backup for a guard: the observed MultigresShard and, with a filesystem repository, its
    backup PVC; None without a guard."""
    if guard is None:
        return None
    pvc = observed.find("PersistentVolumeClaim", guard.backup_pvc) if guard.backup_pvc else None
    return recorded_backup(observed.cr, pvc)


def effective(mode: str, recorded: str | None) -> keys.Bootstrap:
    """What a pod may do on an empty data directory: INITDB or RECOVERY (never AUTO)."""
    if mode == keys.Bootstrap.AUTO:
        return keys.Bootstrap.RECOVERY if recorded else keys.Bootstrap.INITDB
    return keys.Bootstrap(mode)


def check_script(guard: Guard, *, initialised: str) -> str:
    """The init container's shell: exit 0 lets the pod start (data present, after running the shell
    `initialised` on it; initdb allowed; or a backup to restore); EXIT_NO_BACKUP / EXIT_UNREADABLE hold
    it, with one line on stderr. On an empty data directory it writes nothing."""
    repo = guard.repository
    info = (f"pgbackrest {repo.arguments()} "
            "--log-level-console=off --log-level-stderr=error --log-level-file=off info --output=json")
    return (
        f'test -f "$PGDATA/PG_VERSION" && {{ {initialised}; exit 0; }}; '
        f'test "${ENV_BOOTSTRAP}" = {keys.Bootstrap.INITDB} && exit 0; '
        f'{repo.key_setup()}out=$({info} 2>&1) || {{ '
        f'echo "{keys.REPOSITORY_CHECK_CONTAINER}: pgbackrest info failed: $out" >&2; exit {EXIT_UNREADABLE}; }}; '
        f'case "$out" in *\'"backup":[{{\'*) echo "{keys.REPOSITORY_CHECK_CONTAINER}: the repository holds a '
        f'backup to restore"; exit 0;; esac; '
        f'echo "{keys.REPOSITORY_CHECK_CONTAINER}: refused: the data directory is empty, {keys.ANN_BOOTSTRAP} is '
        f'$BOOTSTRAP and the repository holds no backup: $out" >&2; exit {EXIT_NO_BACKUP}'
    )


@dataclass(frozen=True)
class Refusal:
    pod: str
    code: int


def _check_exit(pod: Manifest) -> int | None:
    """The repository check's last exit code while it has not succeeded since, else None."""
    for entry in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if entry.get("name") != keys.REPOSITORY_CHECK_CONTAINER:
            continue
        state = entry.get("state") or {}
        done = state.get("terminated") or (None if "running" in state else (entry.get("lastState") or {})
                                           .get("terminated"))
        code = (done or {}).get("exitCode")
        return int(code) if code in (EXIT_NO_BACKUP, EXIT_UNREADABLE) else None
    return None


def refusals(pods: Iterable[Manifest]) -> list[Refusal]:
    """Pool pods (not being deleted) held by the check, by name."""
    out = [Refusal(facts.name(p), code) for p in pods if not facts.is_terminating(p)
           and (code := _check_exit(p)) is not None]
    return sorted(out, key=lambda r: r.pod)


def _why(guard: Guard, recorded: str | None) -> str:
    if guard.mode == keys.Bootstrap.RECOVERY:
        return "spec.backup.bootstrap is recovery"
    return f"the shard recorded backup {recorded}"


def condition(guard: Guard | None, recorded: str | None, pods: Iterable[Manifest]) -> Manifest:
    found = refusals(pods) if guard is not None else []
    if guard is None or not found:
        return shard_condition(keys.ShardCondition.BOOTSTRAP_REFUSED, False, REASON_ALLOWED, "")
    names = ", ".join(r.pod for r in found)
    where = (f"the backup repository (PVC {guard.backup_pvc} at {guard.repository.location})" if guard.backup_pvc
             else f"the backup repository ({guard.repository.location})")
    unreadable = any(r.code == EXIT_UNREADABLE for r in found)
    if unreadable:
        reason, what = REASON_UNREADABLE, f"pgbackrest info failed on {where}"
        hint = (f"read kubectl logs <pod> -c {keys.REPOSITORY_CHECK_CONTAINER}, and fix the volume or the S3 "
                "location and credentials; or set "
                "spec.backup.bootstrap: initdb to start a new, empty shard on purpose")
    else:
        reason, what = REASON_NO_BACKUP, f"{where} holds no complete backup although {_why(guard, recorded)}"
        hint = ("bring the repository back (the shard's backup PVC or its content, or the objects under the S3 "
                "prefix), or set "
                "spec.backup.bootstrap: initdb to start a new, empty shard on purpose")
    message = (f"{names}: {what}; PostgreSQL is not initialised there, so that no new, empty shard takes "
               f"the place of the one the backups hold, and nothing is written to the repository. To go on: {hint}")
    return shard_condition(keys.ShardCondition.BOOTSTRAP_REFUSED, True, reason, message)


def subjects(message: str) -> frozenset[str]:
    """The pods a BootstrapRefused message names (a warning repeats only when they change)."""
    head = message.split(": ", 1)[0] if message else ""
    return frozenset(filter(None, (p.strip() for p in head.split(","))))


def pod_annotation(guard: Guard | None, recorded: str | None) -> Mapping[str, str]:
    """The pool pod's ANN_BOOTSTRAP for this guard and evidence (nothing when pods carry no check)."""
    return {} if guard is None else {keys.ANN_BOOTSTRAP: effective(guard.mode, recorded).value}


# --- the restore in the status (the agent's ANN_RESTORE on each pool pod; agent/restore_watch.py) ---
_RUNNING_STATES = {keys.RestoreState.RESTORING: "RestoringFromBackup",
                   keys.RestoreState.FIRST_BACKUP: "CreatingFirstBackup"}


def _facts(pods: Iterable[Manifest]) -> list[tuple[str, Manifest]]:
    return sorted(((facts.name(p), f) for p in pods if not facts.is_terminating(p)
                   and (f := facts.json_annotation(p, keys.ANN_RESTORE)) is not None and f.get("state")),
                  key=lambda item: item[0])


def restoring_condition(pods: Iterable[Manifest]) -> Manifest:
    """Restoring: True while a pooler restores from the repository (or creates the first backup)."""
    running = [(name, fact) for name, fact in _facts(pods) if fact["state"] in _RUNNING_STATES]
    if not running:
        return shard_condition(keys.ShardCondition.RESTORING, False, "NotRestoring", "")
    reason = _RUNNING_STATES[keys.RestoreState(running[0][1]["state"])]
    what = ("restoring the newest complete backup from the repository, then the archived WAL"
            if reason == "RestoringFromBackup" else
            "no backup in the repository: initdb and the shard's first backup (a new, empty shard)")
    since = min(str(fact.get("startedAt", "")) for name, fact in running)
    return shard_condition(keys.ShardCondition.RESTORING, True, reason,
                           f"{', '.join(name for name, fact in running)}: {what} (since {since})")


def restore_status(pods: Iterable[Manifest]) -> Manifest:
    """status.restore: the pods restoring now (state Restoring), else what the pods that restored last
    report (state Restored: the backup, the newest WAL position reached, when); {} when none did."""
    found = _facts(pods)
    running = [(name, fact) for name, fact in found if fact["state"] == keys.RestoreState.RESTORING]
    if running:
        return {"restore": {"state": "Restoring", "pods": [name for name, fact in running],
                            "startedAt": min(str(fact.get("startedAt", "")) for name, fact in running)}}
    done = [fact for name, fact in found if fact["state"] == keys.RestoreState.RESTORED]
    if not done:
        return {}
    out: Manifest = {"state": "Restored",
                     "pods": [name for name, fact in found if fact["state"] == keys.RestoreState.RESTORED],
                     "startedAt": min(str(fact.get("startedAt", "")) for fact in done),
                     "finishedAt": max(str(fact.get("finishedAt", "")) for fact in done)}
    ids = sorted({str(fact["backupId"]) for fact in done if fact.get("backupId")})
    if ids:
        out["backupId"] = ids[-1]
    positions = [str(fact["walPosition"]) for fact in done if fact.get("walPosition")]
    if positions:
        out["walPosition"] = max(positions, key=lambda p: facts.lsn_bytes(p) or -1)
    return {"restore": out}
