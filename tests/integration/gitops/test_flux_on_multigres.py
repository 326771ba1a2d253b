"""Flux for real (issue #28): source-controller and kustomize-controller v1.9.3, built from the Go
module proxy, run as processes against the stack's API server, pull a real Git repository served
by Git's own smart-HTTP server; what they apply is the output of `multigres-pools render` committed
to it, judged by the Kustomization we ship (gitops/flux/shards.yaml: its healthCheckExprs read our
kstatus conditions). Our operator and agent run the shard on real Multigres v0.1.0 under a write
load. The story: the commit creates the shard and the Kustomization turns Ready only once it
serves; a commit the API server refuses shows as a failed Kustomization naming the field and
changes nothing; a commit that scales down goes through our drain with nothing lost, Flux restarted
while the drain runs; a commit
that removes the shard prunes it, and its deletion completes."""

from __future__ import annotations

import copy
import datetime as dt
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground import flux as flux_module
from multigres_pools.playground.flux import Flux
from multigres_pools.playground.gitserver import GitServer, WorkTree
from multigres_pools.playground.localstack import ensure_namespace, wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from tests.helpers.operator_steps import refusal
from tests.integration.gitops.story import scale_down_through_the_drain
from tests.integration.multigres.safety import SHARD, STACK_TIMEOUT, Watched, shard_cr, uids

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
REPO = Path(__file__).resolve().parents[3]
KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
GIT_REPOSITORY = ("source.toolkit.fluxcd.io/v1", "GitRepository")
RECONCILE_REQUESTED = "reconcile.fluxcd.io/requestedAt"  # what `flux reconcile` sets


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MultigresStack, WorkTree, KubeClient, Flux]]:
    workdir = tmp_path_factory.mktemp("flux")
    stack = MultigresStack(workdir / "stack", progress=lambda line: print(line, flush=True))
    try:
        stack.start()
        kube = stack.kube()
        flux_module.install_crds(kube)
        ensure_namespace(kube, flux_module.NAMESPACE)
        with GitServer(workdir / "git") as git, Flux(workdir / "flux", stack.kubeconfig) as flux:
            tree = git.create("platform")
            kube.apply(_git_repository(git.url("platform")), "test", force=True)
            kube.apply(_shipped_kustomization(), "test", force=True)
            try:
                yield stack, tree, kube, flux
            finally:
                print("--- kustomize-controller (tail) ---\n" + flux.log("kustomize-controller", 3000))
                kube.close()
    finally:
        stack.stop()


def _git_repository(url: str) -> dict[str, Any]:
    return {"apiVersion": GIT_REPOSITORY[0], "kind": GIT_REPOSITORY[1],
            "metadata": {"name": "platform", "namespace": flux_module.NAMESPACE},
            "spec": {"url": url, "interval": "1h", "ref": {"branch": "main"}, "timeout": "30s"}}


def _shipped_kustomization() -> dict[str, Any]:
    """gitops/flux/shards.yaml as we ship it; the operator is already installed here, so its dependsOn
    on the install Kustomization goes, and the tests ask for each reconcile instead of an interval."""
    doc: dict[str, Any] = yaml.safe_load((REPO / "gitops" / "flux" / "shards.yaml").read_text())
    doc["spec"].pop("dependsOn")
    doc["spec"]["interval"] = "1h"
    return doc


def _render(tree: WorkTree, shard: dict[str, Any]) -> None:
    """What CI does before a commit: the inventory file and `render -d inventory/ -o shards/ --only crs`."""
    inventory = tree.path / "inventory"
    inventory.mkdir(exist_ok=True)
    (inventory / "play.yaml").write_text(yaml.safe_dump(shard, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "multigres_pools.cli", "render", "-d", str(inventory), "-o",
                           str(tree.path / "shards"), "--only", "crs"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _kustomization(kube: KubeClient) -> dict[str, Any]:
    return kube.get(*KUSTOMIZATION, flux_module.NAMESPACE, "multigres-shards") or {}


def _sync(kube: KubeClient) -> None:
    """`flux reconcile kustomization --with-source`: both objects asked to reconcile now."""
    stamp = facts.format_time(dt.datetime.now(dt.UTC))
    for (api_version, kind), name in ((GIT_REPOSITORY, "platform"), (KUSTOMIZATION, "multigres-shards")):
        kube.merge_patch(api_version, kind, flux_module.NAMESPACE, name,
                         {"metadata": {"annotations": {RECONCILE_REQUESTED: stamp}}}, field_manager="test")


def _applied(kube: KubeClient, commit: str, ready: str, timeout: float = 600, reason: str = "") -> dict[str, Any]:
    """Until the Kustomization reports `commit` and Ready=`ready` (with `reason`, when given); its Ready
    condition then. A reason tells one False from another: while Flux checks the health of a new
    commit, Ready can still be the False a refused commit before it left."""
    def done() -> dict[str, Any] | None:
        k = _kustomization(kube)
        cond = facts.condition(k, "Ready") or {}
        attempted = (k.get("status") or {}).get("lastAttemptedRevision") or ""
        wanted = cond.get("status") == ready and (not reason or cond.get("reason") == reason)
        return cond if attempted.endswith(commit) and wanted else None

    return wait_for(done, timeout, f"the Kustomization at {commit[:8]} Ready={ready}", interval=1)


def test_flux_applies_refuses_scales_down_and_prunes_a_shard_from_git(rig) -> None:  # type: ignore[no-untyped-def]
    stack, tree, kube, flux = rig
    shard = stack.sample_shard(replicas=3)
    _render(tree, shard)
    commit = tree.commit({}, "the play shard, rendered")
    started = time.monotonic()
    _sync(kube)
    created = _applied(kube, commit, "True")
    print(f"[measured] commit -> Kustomization Ready (the shard serving): {time.monotonic() - started:.1f}s; "
          f"{created.get('reason')}: {created.get('message')}", flush=True)
    stack.wait_serving(SHARD, replicas=3, timeout=600)
    # Flux waited for our Ready (healthCheckExprs), not only for the apply.
    ours = facts.condition(shard_cr(stack), "Ready") or {}
    assert ours.get("status") == "True" and created["lastTransitionTime"] >= ours["lastTransitionTime"], (created, ours)

    watched = Watched(stack)
    watched.start()
    try:
        # A commit the API server refuses (the CRD's grow-only rule): the Kustomization fails and
        # names the field; the shard keeps its generation.
        generation = facts.meta(shard_cr(stack)).get("generation")
        shrunk = copy.deepcopy(shard)
        shrunk["spec"]["pools"]["default"]["storage"] = {"size": "512Mi"}
        _render(tree, shrunk)
        bad = tree.commit({}, "shrink the volumes (refused)")
        _sync(kube)
        refused = _applied(kube, bad, "False", timeout=300)
        print(f"[measured] refused commit: {refused.get('reason')}: {refused.get('message')}", flush=True)
        assert "MultigresShard/play/play" in refused["message"], refused
        assert "storage size can only grow" in refused["message"], refused
        assert facts.meta(shard_cr(stack)).get("generation") == generation

        # A commit the API server admits and our operator refuses (a rendered file edited by hand, so
        # `render` never saw it): the health check fails on our Stalled condition, the pods stay.
        pods = uids(stack)
        _render(tree, shard)
        rendered = tree.path / "shards" / "multigresshard-play.yaml"
        edited = yaml.safe_load(rendered.read_text())
        edited["spec"]["backup"].setdefault("schedules", {})["full"] = "61 1 * * 0"
        hand = tree.commit({"shards/multigresshard-play.yaml": yaml.safe_dump(edited, sort_keys=False)},
                           "back up at minute 61 (refused by the operator)")
        _sync(kube)
        stalled = _applied(kube, hand, "False", timeout=300, reason="HealthCheckFailed")
        print(f"[measured] operator-refused commit: {stalled.get('reason')}: {stalled.get('message')}", flush=True)
        assert stalled["reason"] == "HealthCheckFailed" and "MultigresShard/play/play" in stalled["message"], stalled
        assert "61" in refusal(shard_cr(stack)), refusal(shard_cr(stack))
        assert uids(stack) == pods
        _render(tree, shard)
        fixed = tree.commit({}, "the play shard, rendered again")
        _sync(kube)
        _applied(kube, fixed, "True")

        # A commit that scales down: our drain, one standby at a time, nothing lost.
        def commit(spec: dict[str, Any]) -> str:
            _render(tree, spec)
            down = tree.commit({}, "scale the play shard to 2")
            _sync(kube)
            return down

        def restart() -> None:
            flux.stop()
            flux.start()
            _sync(kube)

        took = scale_down_through_the_drain(stack, watched, shard, commit, restart,
                                            lambda down: _applied(kube, down, "True"))
        print(f"[measured] scale-down commit -> Kustomization Ready: {took:.1f}s", flush=True)
    finally:
        watched.stop()

    # A commit that removes the shard: Flux prunes it; our finalizer lets it go after the cleanup.
    gone = tree.commit({"inventory/play.yaml": None, "shards/multigresshard-play.yaml": None,
                        "shards/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                                                     "kind: Kustomization\nresources: []\n"}, "remove the play shard")
    started = time.monotonic()
    _sync(kube)
    _applied(kube, gone, "True")
    wait_for(lambda: kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD) is None, 300,
             "the pruned MultigresShard to go", interval=1)
    print(f"[measured] removal commit -> MultigresShard gone: {time.monotonic() - started:.1f}s", flush=True)
    wait_for(lambda: stack.pods() == [], 300, "the pool pods to go", interval=1)
