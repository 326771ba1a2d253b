"""The `multigres.com/spec-hash` of a pool pod and the `postgres-config-hash` it folds in (contract §3.6).

The hash covers only what we render (never fields the apiserver or kubelet fill in), so a live pod
compares equal to its desired spec until the spec really changes. It is computed over the pod
spec with the per-index values (name, hostname, service id, claim) left as placeholders, so one
pool in one cell has one hash for every index. It has the Go operator's format (8 lowercase hex
characters) but not its input (canonical JSON instead of Go's field concatenation), so a pod made
by the Go operator always looks drifted and is replaced once, through a drain; the digest is the
first 8 hex characters of SHA-256, which is many times faster than a pure-Python FNV over 5 kB.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_hash(pod_spec: Mapping[str, Any], postgres_config_hash: str = "") -> str:
    payload = f"{canonical_json(pod_spec)}\x00pgcfg={postgres_config_hash}"
    return hashlib.sha256(payload.encode()).hexdigest()[:8]


def digest(value: Any) -> str:
    """8 hex characters of SHA-256 over the canonical JSON of `value`."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:8]


def config_hash(text: str) -> str:
    """SHA-256 hex of a postgres config text, as the Go operator hashes `ConfigMap.data[key]`."""
    return hashlib.sha256(text.encode()).hexdigest()
