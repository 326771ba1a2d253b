"""GitOps health of a MultigresShard as ArgoCD and Flux compute it, with real evaluators.

ArgoCD: `gitops/argocd/health.lua` in a real Lua 5.4, run the way ArgoCD runs a health script (the
object as the global `obj`, the chunk returns {status, message}).

Flux: the `healthCheckExprs` of `gitops/flux/shards.yaml` in a real CEL evaluator (the
`common-expression-language` package), in the order kustomize-controller applies them (Flux
RFC-0009): InProgress when `status.observedGeneration` exists and differs from
`metadata.generation`; otherwise the first of inProgress, failed, current that is true; InProgress
when none is. An evaluation error is what Flux reports as an error (Unknown), never a health.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
LUA = shutil.which("lua5.4") or shutil.which("lua")
FLUX_ORDER = (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current"))


def _lua_literal(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {_lua_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ", ".join(_lua_literal(v) for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def argocd_health(obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) of health.lua for `obj`."""
    if LUA is None:
        raise RuntimeError("no Lua interpreter (apt-get install lua5.4)")
    script = (f"obj = {_lua_literal(obj)}\n"
              f"local hs = (function()\n{(REPO / 'gitops' / 'argocd' / 'health.lua').read_text()}\nend)()\n"
              "io.write(hs.status, '\\t', hs.message)")
    out = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True, check=True).stdout
    status, message = out.split("\t", 1)
    return status, message


@functools.cache
def flux_expressions() -> dict[str, str]:
    (shards,) = yaml.safe_load_all((REPO / "gitops" / "flux" / "shards.yaml").read_text())
    (exprs,) = shards["spec"]["healthCheckExprs"]
    return {key: exprs[key] for key, _ in FLUX_ORDER if exprs.get(key)}


def flux_health(obj: dict[str, Any], expressions: dict[str, str] | None = None) -> str:
    """InProgress, Failed or Current, or `Unknown: <error>` when an expression cannot be evaluated."""
    import cel

    status = obj.get("status")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    if observed is not None and observed != obj.get("metadata", {}).get("generation"):
        return "InProgress"
    exprs = flux_expressions() if expressions is None else expressions
    for key, result in FLUX_ORDER:
        if key not in exprs:
            continue
        try:
            value = cel.evaluate(exprs[key], obj)
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:  # what the evaluator raises
            return f"Unknown: {key}: {exc}"
        if not isinstance(value, bool):
            return f"Unknown: {key} is not a boolean: {value!r}"
        if value:
            return result
    return "InProgress"


# What ArgoCD and Flux must report at each moment of a shard's life (captured from the engine on
# the real apiserver by tests/integration/reconcile/test_gitops_health.py, replayed by
# tests/unit/render/test_gitops.py from CAPTURES).
EXPECTED: dict[str, tuple[str, str]] = {
    "created": ("Progressing", "InProgress"),
    "progressing": ("Progressing", "InProgress"),
    "converged": ("Healthy", "Current"),
    "refused-live": ("Degraded", "Failed"),  # storage below a PVC grown out of band
    "refused-invalid": ("Degraded", "Failed"),  # accepted by the CRD, refused by the model
    "refused-by-operator": ("Degraded", "Failed"),  # the operator's report when the module could not
    "deleting": ("Progressing", "InProgress"),
}
CAPTURES = REPO / "tests" / "unit" / "render" / "gitops_captures.yaml"
_VOLATILE = ("uid", "resourceVersion", "managedFields", "creationTimestamp")


def capture(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as health checks see it, minus the fields that change on every run."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in _VOLATILE}
    return {**obj, "metadata": meta}
