"""Marks a MultigresShard ConfigurationValid=False when the playbook failed on its spec before the
module could write status itself (for example a spec the module cannot even parse).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils import keys

from .outcome import CONFIGURATION_VALID

# The same conditions the reconcile module writes when it can read the spec but finds it invalid.
VALID_REASON = "Invalid"
STALLED_REASON = "InvalidSpec"


def with_condition(conditions: Sequence[Mapping[str, Any]], new: Mapping[str, Any],
                   now: str) -> list[dict[str, Any]] | None:
    """`conditions` with `new` set (lastTransitionTime kept unless the status flips); None if unchanged."""
    out: list[dict[str, Any]] = []
    found = False
    for cond in conditions:
        if cond.get("type") != new["type"]:
            out.append(dict(cond))
            continue
        found = True
        if all(cond.get(k) == v for k, v in new.items()):
            return None
        stamp = cond.get("lastTransitionTime") if cond.get("status") == new["status"] else now
        out.append({**new, "lastTransitionTime": stamp or now})
    if not found:
        out.append({**new, "lastTransitionTime": now})
    return out


def invalid_conditions(message: str, generation: int | None) -> list[dict[str, Any]]:
    extra = {} if generation is None else {"observedGeneration": generation}
    text = message[:32768]
    return [{"type": CONFIGURATION_VALID, "status": "False", "reason": VALID_REASON, "message": text, **extra},
            {"type": "Stalled", "status": "True", "reason": STALLED_REASON, "message": text, **extra}]


class InvalidSpecReporter:
    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self.api = client.CustomObjectsApi(api_client)

    def __call__(self, namespace: str, name: str, message: str) -> None:
        args = (keys.API_GROUP, keys.API_VERSION, namespace, keys.SHARD_PLURAL, name)
        obj = self.api.get_namespaced_custom_object(*args)
        meta = obj.get("metadata", {})
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = (obj.get("status") or {}).get("conditions") or []
        changed = False
        for cond in invalid_conditions(message, meta.get("generation")):
            updated = with_condition(conditions, cond, now)
            if updated is not None:
                conditions, changed = updated, True
        if not changed:
            return
        # The resourceVersion makes this a compare-and-swap: a concurrent status write wins.
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": {"conditions": conditions}}
        self.api.patch_namespaced_custom_object_status(*args, body)
