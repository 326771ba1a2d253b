"""The shard this package's stack serves (conftest.py starts it; the modules read its settings)."""

from __future__ import annotations

from typing import Any

from ..safety import SHARD

NEVER = "0 0 1 1 *"  # the schedules exist but never fire during a test: backups are taken on request
REPLICAS = 3
# v0.1.0 archives a WAL segment only once it is full (archive_timeout 0): under a light load the
# writes since the last backup would wait for minutes. 10s bounds what the repository (and a copy of
# it) misses; set the way docs/operations.md says, through spec.postgresConfig.
ARCHIVE_TIMEOUT = "10s"


def shard_spec(stack: Any, name: str = SHARD, replicas: int = REPLICAS) -> dict[str, Any]:
    """The package's shard: backups on request only, WAL archived at least every ARCHIVE_TIMEOUT."""
    doc: dict[str, Any] = stack.sample_shard(replicas=replicas, name=name)
    doc["spec"]["backup"]["schedules"] = {"full": NEVER, "differential": NEVER}
    doc["spec"]["postgresConfig"] = {"archive_timeout": ARCHIVE_TIMEOUT}
    return doc
