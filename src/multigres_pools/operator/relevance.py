"""Which watch events matter, and which shard they belong to.

Every write the reconcile makes (a pod created, a drain annotation, the status) comes back as a
watch event. Re-running on all of them would keep the operator busy for nothing, and re-running
on our own status write would loop forever. So each object is reduced to a fingerprint of the
fields the planner reads; an event whose fingerprint did not change is dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.core.naming import ShardId
from ansible_collections.multigres.pools.plugins.module_utils.status import pod_stuck

ShardKey = tuple[str, str]  # (namespace, MultigresShard name)

# The Go operator and the contract default these when the spec leaves them out (contract §3.7).
_SPEC_DEFAULTS = {"databaseName": "postgres", "tableGroupName": "default", "shardName": "0-inf"}


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _meta(obj: Manifest) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "labels": meta.get("labels") or {},
        "annotations": meta.get("annotations") or {},
        "deletionTimestamp": meta.get("deletionTimestamp"),
        "finalizers": meta.get("finalizers") or [],
        "ownerReferences": [(o.get("kind"), o.get("name")) for o in meta.get("ownerReferences") or []],
    }


def _condition_states(status: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    # Type, status and reason (the agent's Fenced moves from one refusal reason to another while False):
    # transition timestamps and heartbeats change without meaning anything.
    return sorted((c.get("type", ""), c.get("status", ""), c.get("reason", "")) for c in status.get("conditions") or [])


def fingerprint(kind: str, obj: Manifest) -> str:
    """A digest of what the planner reads from `obj`; equal digests mean "nothing to do"."""
    status = obj.get("status") or {}
    parts: dict[str, Any] = {"meta": _meta(obj)}
    if kind == keys.SHARD_KIND:
        # generation moves on spec changes only; status is ours and must never trigger a run.
        parts["generation"] = (obj.get("metadata") or {}).get("generation")
    elif kind == "Pod":
        parts["phase"] = status.get("phase")
        parts["conditions"] = _condition_states(status)
        parts["images"] = [c.get("image") for c in (obj.get("spec") or {}).get("containers") or []]
        # PodsStuck names waiting containers, which change no phase or pod condition.
        parts["waiting"] = list(pod_stuck.waiting(obj))
    elif kind == "PersistentVolumeClaim":
        parts["spec"] = (obj.get("spec") or {}).get("resources")
        parts["phase"] = status.get("phase")
        parts["capacity"] = status.get("capacity")
        parts["conditions"] = _condition_states(status)
    elif kind == "Deployment":  # the status reports orchReady from readyReplicas
        parts["spec"] = obj.get("spec")
        parts["ready"] = status.get("readyReplicas")
    else:  # PodDisruptionBudget and anything else we own: spec and metadata
        parts["spec"] = obj.get("spec")
    return _digest(parts)


def shard_id_from_spec(spec: Mapping[str, Any]) -> ShardId | None:
    cluster = spec.get("clusterName")
    if not cluster:
        return None
    return ShardId(str(cluster), *(str(spec.get(k) or d) for k, d in _SPEC_DEFAULTS.items()))


def shard_id_from_labels(labels: Mapping[str, str]) -> ShardId | None:
    cluster, database, tablegroup, shard = (labels.get(k, "") for k in (
        keys.LABEL_CLUSTER, keys.LABEL_DATABASE, keys.LABEL_TABLEGROUP, keys.LABEL_SHARD))
    if not (cluster and database and tablegroup and shard):
        return None
    return ShardId(cluster, database, tablegroup, shard)


def owner_shard(obj: Manifest) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        ours = str(ref.get("apiVersion", "")).startswith(keys.API_GROUP + "/")
        if ours and ref.get("kind") == keys.SHARD_KIND:
            return cast(str | None, ref.get("name"))
    return None


@dataclass
class Router:
    """Maps events to shard keys and drops the ones that change nothing the planner reads.

    Children are found by their ownerReference to the MultigresShard, else by their shard labels
    (a data PVC kept with `whenDeleted: Retain` has no ownerReference).
    """

    _by_id: dict[tuple[str, ShardId], str] = field(default_factory=dict)
    _seen: dict[tuple[str, str, str], str] = field(default_factory=dict)
    _generation: dict[ShardKey, int | None] = field(default_factory=dict)

    def shard_event(self, event_type: str | None, obj: Manifest) -> tuple[ShardKey, bool, bool] | None:
        """For a MultigresShard event: (key, spec_changed, gone), or None if nothing changed."""
        meta = obj.get("metadata") or {}
        key: ShardKey = (meta.get("namespace", ""), meta.get("name", ""))
        sid = shard_id_from_spec(obj.get("spec") or {})
        if event_type == "DELETED":
            self._forget_shard(key)
            return key, False, True
        if sid is not None:
            self._by_id[(key[0], sid)] = key[1]
        generation = meta.get("generation")
        spec_changed = self._generation.get(key, object()) != generation
        self._generation[key] = generation
        if not self._changed(keys.SHARD_KIND, obj):
            return None
        return key, spec_changed, False

    def shard_of(self, obj: Manifest) -> ShardKey | None:
        """The shard a child belongs to: its owner, else the shard its labels name; None if neither."""
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        owner = owner_shard(obj)
        sid = shard_id_from_labels(meta.get("labels") or {})
        if owner and sid:
            self._by_id[(namespace, sid)] = owner
        name = owner or (self._by_id.get((namespace, sid)) if sid else None)
        return None if name is None else (namespace, name)

    def child_event(self, kind: str, event_type: str | None, obj: Manifest) -> ShardKey | None:
        """For a pod/PVC/PDB event: the shard to reconcile, or None if it is not ours or unchanged."""
        meta = obj.get("metadata") or {}
        key = self.shard_of(obj)
        if key is None:
            return None
        namespace, name = key
        if event_type == "DELETED":
            self._seen.pop((kind, namespace, meta.get("name", "")), None)
            return namespace, name
        return (namespace, name) if self._changed(kind, obj) else None

    def _changed(self, kind: str, obj: Manifest) -> bool:
        meta = obj.get("metadata") or {}
        ident = (kind, meta.get("namespace", ""), meta.get("name", ""))
        digest = fingerprint(kind, obj)
        if self._seen.get(ident) == digest:
            return False
        self._seen[ident] = digest
        return True

    def _forget_shard(self, key: ShardKey) -> None:
        self._generation.pop(key, None)
        self._seen.pop((keys.SHARD_KIND, *key), None)
        for ident in [i for i, name in self._by_id.items() if i[0] == key[0] and name == key[1]]:
            del self._by_id[ident]

    def knows(self, key: ShardKey) -> bool:
        return key in self._generation

    def shards(self) -> list[ShardKey]:
        return sorted(self._generation)
