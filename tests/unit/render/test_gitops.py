"""The ArgoCD plugin (run as ArgoCD runs it), the Lua health check (a real Lua 5.4) and the Flux
health expressions (a real CEL evaluator), over hand-made statuses and over statuses captured from
the engine at every moment of a shard (tests/helpers/gitops_health.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import render_corpus as corpus
from tests.helpers import gitops_health as gh

REPO = Path(__file__).resolve().parents[3]
ARGOCD = REPO / "gitops" / "argocd"
health = gh.argocd_health


def _shard(generation=2, status=None, deleting=False):
    obj = {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard",
           "metadata": {"name": "demo", "generation": generation}, "spec": corpus.spec()}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-05-01T12:00:00Z"
    if status is not None:
        obj["status"] = status
    return obj


def _cond(type_, status, message=""):
    return {"type": type_, "status": status, "reason": "R", "message": message}


needs_lua = pytest.mark.skipif(gh.LUA is None, reason="no Lua interpreter (apt-get install lua5.4)")
REFUSED = {"observedGeneration": 2, "phase": "Degraded", "conditions": [
    _cond("Ready", "False", "spec.pools.main.storage.size: 1Gi is smaller than PVC"),
    _cond("Reconciling", "False", "waiting for a spec change"),
    _cond("Stalled", "True", "spec.pools.main.storage.size: 1Gi is smaller than PVC")]}

# (status, deleting) -> (ArgoCD, Flux)
CASES = [
    pytest.param({}, False, ("Progressing", "Waiting for the operator to observe generation 2"), "InProgress",
                 id="created"),
    pytest.param({"observedGeneration": 1, "conditions": [_cond("Ready", "True", "all good")]}, False,
                 ("Progressing", "Waiting for the operator to observe generation 2"), "InProgress", id="lagging"),
    pytest.param({"observedGeneration": 2, "conditions": [_cond("Ready", "True", "3/3 pods ready")]}, False,
                 ("Healthy", "3/3 pods ready"), "Current", id="converged"),
    pytest.param({"observedGeneration": 2, "conditions": [_cond("Ready", "False", "drain stuck"),
                                                          _cond("Stalled", "True", "drain of pod-1 stalled")]},
                 False, ("Degraded", "drain of pod-1 stalled"), "Failed", id="stalled"),
    pytest.param(REFUSED, False, ("Degraded", "spec.pools.main.storage.size: 1Gi is smaller than PVC"), "Failed",
                 id="refused"),
    pytest.param({"observedGeneration": 2, "conditions": [_cond("Ready", "False", ""),
                                                          _cond("Reconciling", "True", "rolling")]}, False,
                 ("Progressing", "rolling"), "InProgress", id="rolling"),
    pytest.param({"observedGeneration": 2, "conditions": [_cond("Ready", "False", "1/3 pods ready")]}, False,
                 ("Progressing", "1/3 pods ready"), "InProgress", id="not-ready"),
    pytest.param({"observedGeneration": 2}, False, ("Progressing", "Waiting for the operator to report status"),
                 "InProgress", id="no-conditions"),
    pytest.param({"observedGeneration": 2, "conditions": [_cond("Ready", "True", "3/3 pods ready")]}, True,
                 ("Progressing", "Being deleted: the operator cleans up before it releases its finalizer"),
                 "InProgress", id="deleting"),
]


@needs_lua
@pytest.mark.parametrize(("status", "deleting", "argocd", "flux"), CASES)
def test_lua_and_flux_health(status, deleting, argocd, flux):
    obj = _shard(status=status, deleting=deleting)
    assert health(obj) == argocd
    assert gh.flux_health(obj) == flux


@needs_lua
def test_lua_waits_for_a_status():
    assert health(_shard()) == ("Progressing", "Waiting for the operator to report status")


def test_flux_expressions_are_valid_before_the_first_status():
    """The old `!has(status.observedGeneration)` fails when `status` is absent: CEL cannot test a
    top-level variable. The CRD defaults `status` to {} so the object always has one."""
    from multigres_pools.install import crd

    schema = crd.shard_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert schema["default"] == {}
    assert gh.flux_health(_shard(status={})) == "InProgress"
    old = {"inProgress": "!has(status.observedGeneration) || status.observedGeneration != metadata.generation || "
                         "status.conditions.exists(c, c.type == 'Reconciling' && c.status == 'True')",
           "failed": "status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')",
           "current": "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"}
    assert gh.flux_health(_shard(status={"observedGeneration": 2}), old).startswith("Unknown")
    assert gh.flux_health(_shard(status={"observedGeneration": 2})) == "InProgress"


def _captures():
    return [pytest.param(obj, id=moment) for moment, obj in yaml.safe_load(gh.CAPTURES.read_text()).items()]


@needs_lua
@pytest.mark.parametrize("obj", _captures())
def test_health_of_statuses_captured_from_the_engine(obj, request):
    moment = request.node.callspec.id
    argocd, flux = health(obj), gh.flux_health(obj)
    assert (argocd[0], flux) == gh.EXPECTED[moment]
    if moment.startswith("refused"):
        status = obj["status"]
        assert status["observedGeneration"] == obj["metadata"]["generation"] and status["phase"] == "Degraded"
        assert argocd[1] in status["message"] or status["message"] in argocd[1]


def test_every_moment_is_captured():
    assert set(yaml.safe_load(gh.CAPTURES.read_text())) == set(gh.EXPECTED)


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
    exprs = gh.flux_expressions()
    lua = (ARGOCD / "health.lua").read_text()
    for condition, key in (("Ready", "current"), ("Stalled", "failed"), ("Reconciling", "inProgress")):
        assert f"c.type == '{condition}'" in exprs[key] and f'conditions["{condition}"]' in lua
    assert "observedGeneration" in exprs["inProgress"] and "observedGeneration" in lua
    assert "deletionTimestamp" in exprs["inProgress"] and "deletionTimestamp" in lua
