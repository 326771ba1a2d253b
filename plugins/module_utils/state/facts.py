"""Read-only facts about live objects: readiness, drain state, role, index. No decisions here."""

# Aliased: the plain future import binds the name `annotations`, which this module defines as a
# function (facts.annotations); type checkers would then take that name for the __future__ feature.
from __future__ import annotations as _postponed_annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from . import drain_annotations

TERMINAL_PHASES = frozenset({"Failed", "Succeeded"})


def meta(obj: Manifest) -> Manifest:
    return obj.get("metadata") or {}


def labels(obj: Manifest) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def annotations(obj: Manifest) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def json_annotation(obj: Manifest | None, key: str) -> dict[str, Any] | None:
    """An annotation holding a JSON object (the agent's reports and bookkeeping); None when it is
    absent, not JSON, or JSON of another shape."""
    raw = annotations(obj).get(key) if obj else None
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def name(obj: Manifest) -> str:
    return str(meta(obj).get("name", ""))


def uid(obj: Manifest) -> str | None:
    return meta(obj).get("uid")


def resource_version(obj: Manifest) -> str | None:
    return meta(obj).get("resourceVersion")


def finalizers(obj: Manifest) -> list[str]:
    return list(meta(obj).get("finalizers") or [])


def is_terminating(obj: Manifest) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def condition(obj: Manifest, kind: str) -> Manifest | None:
    conditions: list[Manifest] = (obj.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == kind:
            return cond
    return None


def node_name(pod: Manifest) -> str:
    """The node a pod is bound to ("" while unscheduled)."""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def condition_true(obj: Manifest, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def index_of(obj: Manifest, base: str) -> int | None:
    """The replica index: our index label, else the numeric suffix after the pool's base name."""
    value = labels(obj).get(keys.LABEL_INDEX)
    if value is not None and value.isdigit():
        return int(value)
    text = name(obj)
    for prefix in (f"{base}-", f"data-{base}-"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return None


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def lsn_bytes(lsn: str) -> int | None:
    """PostgreSQL's `X/Y` (two hex halves) as a byte position; None when it is not one."""
    high, sep, low = lsn.partition("/")
    try:
        return (int(high, 16) << 32) + int(low, 16) if sep else None
    except ValueError:
        return None


def format_time(stamp: dt.datetime) -> str:
    return stamp.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def crashlooping(pod: Manifest) -> bool:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            return True
    return False


@dataclass(frozen=True)
class PodFacts:
    obj: Manifest
    name: str
    uid: str | None
    resource_version: str | None
    index: int
    ready: bool
    terminal: bool
    terminating: bool
    drain_state: keys.DrainState | None
    drain_reason: str | None
    role: str | None
    spec_hash: str | None
    switchover: str | None
    has_finalizer: bool
    crashlooping: bool
    # A drain-state value that is no DrainState: reported, and the pod is left alone (no drain).
    drain_unknown: str | None = None
    # Carries the agent's backup mark (keys.ANN_BACKUP_RUNNING): its drain would wait for the backup.
    backing_up: bool = False
    # Carries the agent's mark (keys.ANN_POSTGRES_STUCK): its PostgreSQL will not start by itself.
    postgres_stuck: bool = False

    @classmethod
    def of(cls, obj: Manifest, index: int) -> PodFacts:
        ann = annotations(obj)
        drain = drain_annotations.read_state(ann)
        return cls(
            obj=obj,
            name=name(obj),
            uid=uid(obj),
            resource_version=resource_version(obj),
            index=index,
            ready=condition_true(obj, "Ready"),
            terminal=(obj.get("status") or {}).get("phase") in TERMINAL_PHASES,
            terminating=is_terminating(obj),
            drain_state=drain.state,
            drain_reason=ann.get(keys.ANN_DRAIN_REASON) or None,
            role=labels(obj).get(keys.LABEL_ROLE) or None,
            spec_hash=ann.get(keys.ANN_SPEC_HASH),
            switchover=ann.get(keys.ANN_SWITCHOVER) or None,
            has_finalizer=keys.FINALIZER_POD in finalizers(obj),
            crashlooping=crashlooping(obj),
            drain_unknown=drain.unknown,
            backing_up=bool(ann.get(keys.ANN_BACKUP_RUNNING)),
            postgres_stuck=bool(ann.get(keys.ANN_POSTGRES_STUCK)),
        )

    @property
    def is_primary(self) -> bool:
        return self.role == keys.Role.PRIMARY

    @property
    def is_drained(self) -> bool:
        return self.role == keys.Role.DRAINED

    @property
    def node(self) -> str:
        """The node the pod is bound to ("" while unscheduled)."""
        return node_name(self.obj)

    @property
    def in_drain(self) -> bool:
        return self.drain_state is not None

    @property
    def leaving(self) -> bool:
        """Going away for good: not to be recreated at its index (scale-down or DRAINED discard)."""
        if self.drain_reason in (keys.DrainReason.SCALE_DOWN, keys.DrainReason.DRAINED_DISCARD):
            return self.in_drain
        return self.is_drained and self.terminating
