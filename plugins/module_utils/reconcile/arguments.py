"""The `shard_reconcile` arguments, apart from the engine so that the module can parse them (and
report a missing library) on a Python that cannot import the engine."""

from __future__ import annotations

from typing import Any

ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "shard": {"type": "dict"},
    "spec": {"type": "dict"},
    "name": {"type": "str"},
    "namespace": {"type": "str"},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "cleanup_timeout": {"type": "float", "default": 120.0},
    "agent_stall_after": {"type": "float"},
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "observed": {"type": "path"},
    "read_owned_by_name": {"type": "bool", "default": False},
    # The operator's allow-lists (spec/policy.py): a list, or one comma-separated string; empty allows all.
    "allowed_images": {"type": "list", "elements": "str", "default": []},
    "allowed_service_accounts": {"type": "list", "elements": "str", "default": []},
    "allowed_secrets": {"type": "list", "elements": "str", "default": [], "no_log": False},  # names, not secrets
    # Where other MultigresShards' claims are looked for (state/claims.py): namespaces, `*` for all.
    "claim_namespaces": {"type": "list", "elements": "str", "default": []},
}
REQUIRED_ONE_OF = [("shard", "spec", "name")]
MUTUALLY_EXCLUSIVE = [("shard", "spec", "name")]
REQUIRED_BY = {"spec": "namespace", "name": "namespace"}
