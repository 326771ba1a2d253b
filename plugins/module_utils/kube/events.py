"""core/v1 Events, as both the engine and the agent record them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.manifest import Manifest

MESSAGE_LIMIT = 1024  # the API server rejects longer event messages


def event_manifest(involved: Mapping[str, Any], event_type: str, reason: str, message: str, *,
                   component: str, instance: str, stamp: str, host: str | None = None) -> Manifest:
    """An Event about `involved` (apiVersion, kind, name, namespace, and uid/resourceVersion when
    known); `stamp` is an RFC 3339 UTC time."""
    ref = {k: v for k, v in involved.items() if v}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{str(ref.get('name', 'obj'))[:200]}.", "namespace": ref.get("namespace")},
        "involvedObject": ref,
        "type": event_type,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component, **({"host": host} if host else {})},
        "reportingComponent": component,
        "reportingInstance": instance,
    }
