"""Where the collection's playbooks, examples and config live: the one place that knows.

The collection is wherever `ansible_collections.multigres.pools` imports from: this checkout in
a development venv (pyproject.toml maps the package onto it), or the copy the wheel installs
into site-packages. MULTIGRES_POOLS_COLLECTION points an installed package at another copy."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

COLLECTION_PACKAGE = "ansible_collections.multigres.pools"
INSTALL_HINT = ("install the package with `pip install multigres-pools` (it carries the collection), or "
                "point MULTIGRES_POOLS_COLLECTION at an installed multigres.pools collection")


def collection_root() -> Path:
    override = os.environ.get("MULTIGRES_POOLS_COLLECTION")
    if override:
        return Path(override).resolve()
    try:
        spec = importlib.util.find_spec(COLLECTION_PACKAGE)
    except ImportError:
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location, "playbooks").is_dir():
            return Path(location).resolve()
    raise RuntimeError(f"the multigres.pools collection is not importable as {COLLECTION_PACKAGE}: {INSTALL_HINT}")


def playbook(name: str) -> Path:
    return collection_root() / "playbooks" / name
