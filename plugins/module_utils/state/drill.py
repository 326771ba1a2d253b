"""The restore drill: what its pod runs, what its exit means, and the engine's record of it.

A backup is only as good as its restore, and the only proof is doing one. The drill pod (rendered by
render/drill.py, started and ended by plan/drill.py) mounts the shard's filesystem repository
read-only and an emptyDir, and its one container, in the pool pods' PostgreSQL image:

1. restores one named backup (`pgbackrest restore --set`, `--type=immediate`: stop as soon as the
   backup is consistent; `--archive-mode=off`) into the emptyDir;
2. starts PostgreSQL on it in recovery (hot standby, no TCP listener, a private socket with a
   pg_hba.conf of its own, archive_mode off): it fetches the WAL the backup needs through the
   restore_command pgBackRest wrote, and never promotes, so it writes no WAL and nothing reaches the
   repository;
3. runs the user's query (spec.backup.verify.query) in spec.backup.verify.database;
4. stops PostgreSQL and exits. Each step has its own exit code, which is all a kubelet reports of a
   container for sure (the real kubelet also keeps the log tail as the termination message).

The record (keys.ANN_RESTORE_DRILL on the MultigresShard, JSON) is the engine's memory between
passes: the schedule time last handled, the drill running (trigger, backup, pod, start), the last result,
and when a backup was last verified. Pure: everything here reads and builds manifests and text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from . import facts
from .bootstrap import label_stamp
from .repository import Repository
from .task_pod import Ended, TaskPod

DATA = "/drill"  # the emptyDir: data directory, socket, lock and log files
EXIT_SETUP = 10
EXIT_RESTORE = 11
EXIT_START = 12
EXIT_QUERY = 13
# Exit code -> (reason, what failed). Anything else (a kill, an image that does not run) is Unexpected.
EXITS = {
    EXIT_SETUP: ("SetupFailed", "the drill could not prepare its working directory"),
    EXIT_RESTORE: ("RestoreFailed", "pgbackrest restore failed"),
    EXIT_START: ("PostgresDidNotStart", "PostgreSQL did not start on the restored data directory"),
    EXIT_QUERY: ("QueryFailed", "the query failed on the restored server"),
}
ENV_BACKUP = "BACKUP_SET"
ENV_QUERY = "DRILL_QUERY"
ENV_DATABASE = "DRILL_DATABASE"
ENV_USER = "DRILL_USER"
# How long a drill pod may be missing from the engine's reads right after it was created (a cache
# that has not seen the create yet) before the drill counts as lost.
LOST_AFTER = dt.timedelta(seconds=60)


def script(repository: Repository, start_timeout_s: int) -> str:
    """The drill container's shell (see the module doc); one progress line per step on stdout."""
    pgdata = f"{DATA}/pgdata"
    restore = (f"{repository.key_setup()}pgbackrest {repository.arguments()} --pg1-path={pgdata} "
               f"--lock-path={DATA}/lock --log-path={DATA}/log --log-level-console=warn --log-level-file=off "
               f'--set="${ENV_BACKUP}" --type=immediate --archive-mode=off restore')
    options = (f"-c listen_addresses='' -c port=5432 -c unix_socket_directories={DATA}/sock "
               f"-c hba_file={DATA}/pg_hba.conf -c archive_mode=off -c hot_standby=on")
    return "; ".join([
        "set -u",
        'fail() { code=$1; shift; echo "restore-drill: $*" >&2; exit "$code"; }',
        f"mkdir -p {DATA}/sock {DATA}/lock {DATA}/log && "
        f"printf 'local all all trust\\n' > {DATA}/pg_hba.conf || fail {EXIT_SETUP} cannot write {DATA}",
        f'echo "restore-drill: restoring backup ${ENV_BACKUP}"',
        f"{restore} || fail {EXIT_RESTORE} pgbackrest restore of backup ${ENV_BACKUP} failed",
        f"pg_ctl --pgdata={pgdata} --wait --timeout={start_timeout_s} --log={DATA}/log/postgres.log "
        f'--options="{options}" start || {{ tail -n 20 {DATA}/log/postgres.log >&2; '
        f"fail {EXIT_START} PostgreSQL did not start on the restored data directory; }}",
        f'out=$(psql --no-psqlrc --host={DATA}/sock --port=5432 --username="${ENV_USER}" '
        f'--dbname="${ENV_DATABASE}" --tuples-only --no-align --set=ON_ERROR_STOP=1 '
        f'--command="${ENV_QUERY}" 2>&1) || {{ pg_ctl --pgdata={pgdata} --mode=immediate stop >/dev/null 2>&1; '
        f'fail {EXIT_QUERY} "the query failed: $out"; }}',
        'echo "restore-drill: the query answered: $(printf %s "$out" | head -c 200)"',
        f"pg_ctl --pgdata={pgdata} --mode=fast --wait stop >/dev/null 2>&1",
        'echo "restore-drill: verified"',
    ])


TASK = TaskPod("drill", keys.RESTORE_DRILL_CONTAINER,
               ("Verified", "the backup restored, PostgreSQL started in recovery and the query answered"), EXITS)


def ended(pod: Manifest) -> Ended | None:
    """The drill's outcome once its pod ended (phase Succeeded or Failed), else None."""
    return TASK.ended(pod)


def newest(backup_ids: Iterable[str]) -> str | None:
    """The newest of pgBackRest backup labels (by bootstrap.label_stamp)."""
    return max(backup_ids, key=label_stamp, default=None)


# --- the record on the MultigresShard ------------------------------------------------------------
def record(cr: Manifest | None) -> dict[str, Any]:
    """The engine's record of drills (keys.ANN_RESTORE_DRILL); {} when absent or unreadable."""
    found = facts.json_annotation(cr, keys.ANN_RESTORE_DRILL) if cr else None
    return dict(found) if isinstance(found, dict) else {}


def handled(rec: dict[str, Any]) -> dt.datetime | None:
    return facts.parse_time(str(rec.get("handled") or ""))
