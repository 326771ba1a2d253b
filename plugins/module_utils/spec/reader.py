"""Typed, lenient reads of a MultigresShard as the API server returns it, for the code that runs beside
the engine (the agent, the operator, the status screen, the switchover command).

The engine validates the whole spec (model.load_shard) and refuses what does not fit; these readers
must not: the agent keeps serving a shard whose new spec the engine refuses, and an object may be
partial (a watch event, a test's fixture). So every accessor reads what it can and falls back to
the CRD's default or to nothing; none raises. The status is read as the typed model
MultigresShardStatus (the one the engine writes it through, status/shard.py), leaving out the
fields, and the conditions, that do not fit it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from ..requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from pydantic import BaseModel, ValidationError

    from .model import BackupSchedules, Condition, MultigresShardStatus

    M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: object) -> M | None:
    """`data` as `model`, or None when it does not fit. Strict: a value is taken as it is on the wire
    (no "3" read as 3), so what is written back from it is what was read."""
    try:
        return model.model_validate(data, strict=True)
    except ValidationError:
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def read_status(raw: object) -> MultigresShardStatus:
    """status as the typed model; a field or a condition that does not fit is left out (an empty
    status when nothing does), so one odd field hides only itself."""
    data = dict(_mapping(raw))
    try:
        return MultigresShardStatus.model_validate(data, strict=True)
    except ValidationError as exc:
        rest = _without(data, exc)
    return parse(MultigresShardStatus, rest) or MultigresShardStatus()


def condition(status: MultigresShardStatus, ctype: str) -> Condition | None:
    """The condition of type `ctype` (kstatus keeps one per type)."""
    return next((c for c in status.conditions if c.type == ctype), None)


def _without(data: dict[str, Any], exc: ValidationError) -> dict[str, Any]:
    """`data` less what `exc` names: a whole field, or single entries of `conditions`."""
    fields, conditions = set(), set()
    for error in exc.errors():
        loc = error["loc"]
        if len(loc) > 1 and loc[0] == "conditions" and isinstance(loc[1], int):
            conditions.add(loc[1])
        elif loc:
            fields.add(loc[0])
    out = {k: v for k, v in data.items() if k not in fields}
    if conditions:
        out["conditions"] = [c for i, c in enumerate(data["conditions"]) if i not in conditions]
    return out


@dataclass(frozen=True)
class PoolReading:
    """One entry of spec.pools, as far as it can be read."""

    name: str
    cells: tuple[str, ...]
    replicas_per_cell: int | None  # None when the spec leaves it to the CRD's default
    raw: Mapping[str, Any]

    def pods(self, field: str) -> tuple[str, ...]:
        """The pod names listed in `field` (decommission, fenced)."""
        return tuple(str(name) for name in self.raw.get(field) or [])


@dataclass(frozen=True)
class ShardReader:
    """A MultigresShard object (a plain dict from the API server, possibly partial or refused)."""

    raw: Mapping[str, Any]

    @classmethod
    def of(cls, obj: Mapping[str, Any] | None) -> ShardReader:
        return cls(_mapping(obj))

    @property
    def spec(self) -> Mapping[str, Any]:
        return _mapping(self.raw.get("spec"))

    @property
    def pools(self) -> tuple[PoolReading, ...]:
        return tuple(_pool(str(name), _mapping(pool)) for name, pool in _mapping(self.spec.get("pools")).items())

    def cells(self) -> tuple[str, ...]:
        """Every cell a pool runs in, sorted."""
        return tuple(sorted({c for pool in self.pools for c in pool.cells}))

    def pods_listed(self, field: str) -> set[str]:
        """Every pod name the pools list in `field` (decommission, fenced)."""
        return {name for pool in self.pools for name in pool.pods(field)}

    @property
    def multigres_version(self) -> str | None:
        """spec.multigres.version as written (None when left to the default); an unknown version is
        the caller's to report."""
        value = _mapping(self.spec.get("multigres")).get("version")
        return str(value) if value else None

    @property
    def backup(self) -> Mapping[str, Any]:
        return _mapping(self.spec.get("backup"))

    def backup_schedules(self) -> BackupSchedules | None:
        """spec.backup.schedules with the model's defaults for what it leaves out; None when invalid
        (the engine refuses that spec and says why in ConfigurationValid)."""
        try:
            return BackupSchedules.model_validate(self.backup.get("schedules") or {})
        except ValueError:
            return None

    @property
    def backup_health_threshold(self) -> str | None:
        """spec.backup.healthThreshold as written (a Go duration); None leaves it to the default."""
        return self.backup.get("healthThreshold") or None

    @cached_property
    def status(self) -> MultigresShardStatus:
        return read_status(self.raw.get("status"))

    def condition(self, ctype: str) -> Condition | None:
        return condition(self.status, ctype)


def _pool(name: str, pool: Mapping[str, Any]) -> PoolReading:
    replicas = pool.get("replicasPerCell")
    return PoolReading(name=name, cells=tuple(str(c) for c in pool.get("cells") or []),
                       replicas_per_cell=replicas if isinstance(replicas, int) else None, raw=pool)
