"""Where the collection's playbooks, examples and config live: the one place that knows.

A checkout holds the collection at its root; an installed package is pointed at a collection
with MULTIGRES_POOLS_COLLECTION (the operator image sets it)."""

from __future__ import annotations

import os
from pathlib import Path


def collection_root() -> Path:
    override = os.environ.get("MULTIGRES_POOLS_COLLECTION")
    if override:
        return Path(override).resolve()
    return Path(__file__).resolve().parents[2]  # src/multigres_pools/paths.py -> checkout root


def playbook(name: str) -> Path:
    return collection_root() / "playbooks" / name
