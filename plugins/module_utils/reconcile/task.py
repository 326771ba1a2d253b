"""The `shard_reconcile` task, shared by its module (runs in a module process, on any connection)
and its action plugin (runs the same code inside ansible-playbook when the connection is local):
argument spec, request building, and the result as the task returns it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kube import client as kube
from ..kube import snapshot
from ..requirements_guard import runtime_requirements
from ..spec.policy import SpecPolicy
from ..state import claims
from . import task_result
from .arguments import ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE, REQUIRED_BY, REQUIRED_ONE_OF
from .shard import Request, request_problems, run_pass

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from yaml import YAMLError

__all__ = ["ARGUMENT_SPEC", "MUTUALLY_EXCLUSIVE", "REQUIRED_BY", "REQUIRED_ONE_OF", "request", "run"]


def request(params: Mapping[str, Any], *, check_mode: bool, diff: bool) -> Request:
    observed = snapshot.load(params["observed"]) if params.get("observed") else None
    return Request(namespace=params["namespace"], spec=params["spec"], name=params["name"], state=params["state"],
                   definition={"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard",
                               **params["shard"]} if params["shard"] else None,
                   check_mode=check_mode, diff=diff, cleanup_timeout=params["cleanup_timeout"], observed=observed,
                   agent_stall_after=params.get("agent_stall_after"),
                   read_owned_by_name=bool(params.get("read_owned_by_name")),
                   policy=SpecPolicy.of(params.get("allowed_images"), params.get("allowed_service_accounts"),
                                        params.get("allowed_secrets")),
                   claim_namespaces=claims.scope(",".join(params.get("claim_namespaces") or ())))


def run(params: Mapping[str, Any], *, check_mode: bool, diff: bool) -> tuple[dict[str, Any], list[str]]:
    """One pass; returns the task result (with `failed` when it failed) and its warnings."""
    req = request(params, check_mode=check_mode, diff=diff)
    problems = request_problems(req)  # before connecting: bad input fails the same with or without a cluster
    if problems:
        return task_result.build(failed=True, msg="shard_reconcile: invalid arguments: " + "; ".join(problems),
                                 errors=problems), []
    try:
        client = kube.connect(params["kubeconfig"], params["context"])
    except (ValueError, OSError, KeyError, TypeError, AttributeError, YAMLError) as exc:
        # A kubeconfig the loader cannot make sense of is bad input too, not a crash.
        return task_result.build(failed=True, msg=f"shard_reconcile: kubeconfig: {type(exc).__name__}: {exc}"), []
    try:
        result = run_pass(client, req)
    except (ValueError, kube.KubeError, OSError) as exc:
        return task_result.build(failed=True, msg=f"shard_reconcile: {exc}"), []
    finally:
        client.close()
    warnings = [line for line in result.waiting if "scale-down" in line and "waits" in line]
    return result.as_dict(), warnings
