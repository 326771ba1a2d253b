"""Keeps ansible-runner's on-disk output bounded.

The Ansible Operator never purged its runner directory and filled the inodes of long-lived pods
(ansible-operator-plugins#47). Here each shard has its own private data dir; after every run only
the newest `keep` run directories survive, and the directories of shards that no longer exist are
removed at each resync.
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

_seq = itertools.count()


def shard_dir(root: Path, namespace: str, name: str) -> Path:
    return root / namespace / name


def new_ident() -> str:
    """A run id that sorts in start order (milliseconds, then a process-wide counter)."""
    return f"{int(time.time() * 1000):015d}-{next(_seq):06d}"


def prune_runs(private_data_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` run directories of one shard; return what was deleted."""
    runs_dir = private_data_dir / "artifacts"
    if not runs_dir.is_dir():
        return []
    runs = sorted((p for p in runs_dir.iterdir() if p.is_dir()), key=lambda p: p.name)
    doomed = runs[: max(0, len(runs) - keep)]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    return doomed


def prune_shards(root: Path, live: Iterable[tuple[str, str]]) -> list[Path]:
    """Delete the private data dirs of shards not in `live`; return what was deleted."""
    keep = {shard_dir(root, ns, name) for ns, name in live}
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for ns_dir in (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in (p for p in ns_dir.iterdir() if p.is_dir()):
            if path not in keep:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        if not any(ns_dir.iterdir()):
            ns_dir.rmdir()
    return removed
