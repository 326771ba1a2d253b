"""The clone (spec.backup.cloneFrom): what its copy pod runs, what its exit means, and the records.

A clone starts from a copy of the source shard's filesystem repository, never from the repository
itself: Multigres v0.1.0 archives WAL and writes backups into the one repository its pods mount, and
a clone's history (its own timeline after its first promotion) must never land in the source's. The
copy pod (rendered by render/clone.py, started and ended by plan/clone.py) mounts the source's backup
PVC read-only at SOURCE and the clone's own at TARGET, and its one container, in the pool pods' image:

1. refuses a source without a stanza (no `backup.info`), and a target that holds files that are not an
   earlier attempt of this same copy (the marker file names the source): nothing else is overwritten;
2. snapshots the source's `backup.info` (and its `.copy`) first, then copies pgBackRest's `archive`
   and `backup` directories but its temporary files, then puts the snapshot back: every backup that
   snapshot lists was complete when it was read, so a backup the source finishes during the copy is
   left out instead of being listed half-copied;
3. checks with `pgbackrest info` that the copy lists a backup, and prints the newest.

The record (keys.ANN_CLONE on the MultigresShard, JSON) is the engine's memory between passes; the
agent's (keys.ANN_CLONE_ELECTION) says whether the clone's own cohort has its first primary
(agent/clone_election.py). Pure: everything here reads and builds manifests and text.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from . import facts
from .repository import posix
from .task_pod import Ended, TaskPod

SOURCE = "/clone-source"  # the source's backup PVC, read-only
TARGET = "/clone-target"  # this shard's backup PVC
WORK = "/clone-work"  # an emptyDir: pgBackRest's lock and log paths
MARKER = ".multigres-pools-clone"  # in TARGET: the source this copy is of
ENV_SOURCE = "CLONE_SOURCE"
EXIT_NO_SOURCE = 20
EXIT_TARGET_USED = 21
EXIT_COPY = 22
EXIT_NO_BACKUP = 23
EXITS = {
    EXIT_NO_SOURCE: ("SourceHasNoRepository", "the source's backup volume holds no pgBackRest stanza"),
    EXIT_TARGET_USED: ("TargetNotEmpty", "this shard's backup volume already holds files that are not a copy "
                                         "of this source: nothing was overwritten"),
    EXIT_COPY: ("CopyFailed", "copying the repository failed"),
    EXIT_NO_BACKUP: ("NoBackupCopied", "the copied repository lists no complete backup"),
}
# How long the copy pod may be missing from the engine's reads right after it was created.
LOST_AFTER = dt.timedelta(seconds=60)
_INFO = "backup/multigres/backup.info"
_TOP = ("archive", "backup")  # what pgBackRest keeps at a repository's root


def script() -> str:
    """The copy container's bash (see the module doc); one progress line per step on stdout."""
    repo = posix(TARGET)
    info = (f"pgbackrest {repo.arguments()} --lock-path={WORK} --log-path={WORK} --log-level-console=off "
            "--log-level-stderr=error --log-level-file=off info --output=json")
    snap = f"{TARGET}/{MARKER}.info"
    return "; ".join([
        "set -u -o pipefail",  # bash: a failed read of the source fails the copy
        'fail() { code=$1; shift; echo "clone-copy: $*" >&2; exit "$code"; }',
        f"test -f {SOURCE}/{_INFO} || fail {EXIT_NO_SOURCE} \"no {_INFO} on the source\'s backup volume\"",
        f'used=$(ls -A {TARGET} | grep -v -x -e lost+found -e {MARKER} -e {MARKER}.info | head -n 3)',
        f'if test -n "$used" && test "$(cat {TARGET}/{MARKER} 2>/dev/null)" != "${ENV_SOURCE}"; then '
        f'fail {EXIT_TARGET_USED} "this shard\'s backup volume holds $used"; fi',
        f'printf %s "${ENV_SOURCE}" > {TARGET}/{MARKER} || fail {EXIT_COPY} cannot write {TARGET}',
        f'echo "clone-copy: copying the repository of ${ENV_SOURCE}"',
        f"rm -rf {snap} && mkdir {snap} && cp -p {SOURCE}/{_INFO} {SOURCE}/{_INFO}.copy {snap}/ "
        f"|| fail {EXIT_COPY} \"cannot read {_INFO} on the source\'s backup volume\"",
        # The repository's own directories, not the volume's root: the volume's root is not ours to
        # chmod or touch on a real node (a provisioner's directory), and lost+found is not pgBackRest's.
        f"set --; for d in {' '.join(_TOP)}; do test -e {SOURCE}/$d && set -- \"$@\" $d; done",
        f"tar -C {SOURCE} --exclude='*.pgbackrest.tmp' -cf - \"$@\" 2> {WORK}/tar.err "
        f"| tar -C {TARGET} --no-same-owner --no-overwrite-dir -xf - 2>> {WORK}/tar.err "
        f"|| fail {EXIT_COPY} \"the copy failed: $(tail -c 400 {WORK}/tar.err)\"",
        f"cp -p {snap}/backup.info {snap}/backup.info.copy {TARGET}/backup/multigres/ "
        f"&& rm -rf {snap} || fail {EXIT_COPY} cannot write {TARGET}",
        f'out=$({info} 2>&1) || fail {EXIT_NO_BACKUP} "pgbackrest info failed on the copy: $out"',
        f'case "$out" in *\'"backup":[{{\'*) ;; *) fail {EXIT_NO_BACKUP} "no complete backup in the copy: $out";; '
        "esac",
        'newest=$(printf %s "$out" | tr , "\\n" | sed -n \'s/.*"label":"\\([^"]*\\)".*/\\1/p\' | tail -n 1)',
        'echo "clone-copy: copied; newest backup $newest"',
    ])


TASK = TaskPod("copy", keys.CLONE_COPY_CONTAINER,
               ("Copied", "the source's repository was copied and lists a complete backup"), EXITS)


def ended(pod: Manifest) -> Ended | None:
    """The copy's outcome once its pod ended (phase Succeeded or Failed), else None."""
    return TASK.ended(pod)


def record(cr: Manifest | None) -> dict[str, Any]:
    """The engine's record of the copy (keys.ANN_CLONE); {} when absent or unreadable."""
    found = facts.json_annotation(cr, keys.ANN_CLONE) if cr else None
    return dict(found) if isinstance(found, dict) else {}


def election(cr: Manifest | None) -> dict[str, Any]:
    """The agent's record of the clone's first primary (keys.ANN_CLONE_ELECTION); {} when absent."""
    found = facts.json_annotation(cr, keys.ANN_CLONE_ELECTION) if cr else None
    return dict(found) if isinstance(found, dict) else {}


def copied(cr: Manifest | None) -> bool:
    return record(cr).get("state") == keys.CloneState.COPIED
