"""The ArgoCD plugin (run as ArgoCD runs it) and the Lua health check (run by a real Lua 5.4)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import render_corpus as corpus

REPO = Path(__file__).resolve().parents[3]
ARGOCD = REPO / "gitops" / "argocd"
LUA = shutil.which("lua5.4") or shutil.which("lua")


def _lua_literal(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {_lua_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ", ".join(_lua_literal(v) for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def health(obj) -> tuple[str, str]:
    """Run health.lua the way ArgoCD does: `obj` is a global, the chunk returns the health table."""
    script = (f"obj = {_lua_literal(obj)}\n"
              f"local hs = (function()\n{(ARGOCD / 'health.lua').read_text()}\nend)()\n"
              "io.write(hs.status, '\\t', hs.message)")
    out = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True, check=True).stdout
    status, message = out.split("\t", 1)
    return status, message


def _shard(generation=2, status=None):
    obj = {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard",
           "metadata": {"name": "demo", "generation": generation}, "spec": corpus.spec()}
    if status is not None:
        obj["status"] = status
    return obj


def _cond(type_, status, message=""):
    return {"type": type_, "status": status, "reason": "R", "message": message}


needs_lua = pytest.mark.skipif(LUA is None, reason="no Lua interpreter (apt-get install lua5.4)")


@needs_lua
@pytest.mark.parametrize(("status", "expected"), [
    (None, ("Progressing", "Waiting for the operator to report status")),
    ({"observedGeneration": 1, "conditions": [_cond("Ready", "True", "all good")]},
     ("Progressing", "Waiting for the operator to observe generation 2")),
    ({"observedGeneration": 2, "conditions": [_cond("Ready", "True", "3/3 pods ready")]},
     ("Healthy", "3/3 pods ready")),
    ({"observedGeneration": 2, "conditions": [_cond("Ready", "False", "drain stuck"),
                                              _cond("Stalled", "True", "drain of pod-1 stalled for 10m")]},
     ("Degraded", "drain of pod-1 stalled for 10m")),
    ({"observedGeneration": 2, "conditions": [_cond("Ready", "False", ""), _cond("Reconciling", "True", "rolling")]},
     ("Progressing", "rolling")),
    ({"observedGeneration": 2, "conditions": [_cond("Ready", "False", "1/3 pods ready")]},
     ("Progressing", "1/3 pods ready")),
    ({"observedGeneration": 2}, ("Progressing", "Waiting for the operator to report status")),
])
def test_lua_health(status, expected):
    assert health(_shard(status=status)) == expected


def test_plugin_discovers_and_generates_like_argocd(tmp_path):
    plugin = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())["spec"]
    app = tmp_path / "app"
    (app / "group_vars").mkdir(parents=True)
    (app / "group_vars" / "all.yml").write_text(yaml.safe_dump({"multigres_shard": {
        "metadata": {"name": "demo"}, "spec": corpus.spec()}}))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "ARGOCD_APP_NAMESPACE": "team-a"}
    discover = subprocess.run(plugin["discover"]["find"]["command"], cwd=app, env=env, capture_output=True, text=True)
    assert discover.returncode == 0 and discover.stdout.strip()
    empty = tmp_path / "empty"
    empty.mkdir()
    miss = subprocess.run(plugin["discover"]["find"]["command"], cwd=empty, env=env, capture_output=True, text=True)
    assert not miss.stdout.strip()

    generate = plugin["generate"]
    result = subprocess.run([*generate["command"], *generate["args"]], cwd=app, env=env,
                            capture_output=True, text=True, check=True)
    docs = list(yaml.safe_load_all(result.stdout))
    assert [(d["kind"], d["metadata"]["namespace"]) for d in docs] == [("MultigresShard", "team-a")]

    (app / "group_vars" / "all.yml").write_text(yaml.safe_dump({"multigres_shard": {
        "metadata": {"name": "demo"}, "spec": corpus.spec({"shardName": "0-80"})}}))
    failed = subprocess.run([*generate["command"], *generate["args"]], cwd=app, env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and failed.stdout == ""
    assert "spec.shardName" in failed.stderr and "single-shard" in failed.stderr


def test_flux_health_expressions_use_the_same_conditions_as_the_lua_check():
    (shards,) = [d for d in yaml.safe_load_all((REPO / "gitops" / "flux" / "shards.yaml").read_text())]
    (expr,) = shards["spec"]["healthCheckExprs"]
    lua = (ARGOCD / "health.lua").read_text()
    for condition, key in (("Ready", "current"), ("Stalled", "failed"), ("Reconciling", "inProgress")):
        assert f"c.type == '{condition}'" in expr[key] and f'conditions["{condition}"]' in lua
    assert "observedGeneration" in expr["inProgress"] and "observedGeneration" in lua
