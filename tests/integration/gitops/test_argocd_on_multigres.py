"""ArgoCD for real (issue #28): argo-cd v3.6.1's application controller, repo server and our config
management plugin (gitops/argocd/plugin.yaml in argocd-cmp-server), built from the Go module proxy
and run as processes against the stack's API server, pull a real Git repository served by Git's own
smart-HTTP server. The repository holds inventory vars, not rendered CRs: the plugin runs
`multigres-pools render` on the repo server. The Application is gitops/argocd/application.yaml and
the health check gitops/argocd/health.lua as shipped. Our operator and agent run the shard on real
Multigres v0.1.0 under a write load. The story: the commit creates the shard and the Application
turns Healthy only once our operator says Ready; a commit `render` refuses shows our message and
changes nothing, and so does one the API server refuses (in ArgoCD's server-side diff); a commit
that scales down goes through our drain with nothing lost, ArgoCD restarted while the drain runs;
deleting the Application deletes the shard, and its deletion completes."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground import argocd as argocd_module
from multigres_pools.playground.argocd import ArgoCD
from multigres_pools.playground.gitserver import GitServer, WorkTree
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from tests.integration.gitops.story import scale_down_through_the_drain
from tests.integration.multigres.safety import SHARD, STACK_TIMEOUT, Watched, shard_cr

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
GITOPS = Path(__file__).resolve().parents[3] / "gitops" / "argocd"
APPLICATION = ("argoproj.io/v1alpha1", "Application")
REFRESH = "argocd.argoproj.io/refresh"  # what `argocd app get --refresh` sets
VARS = "shards/play.yml"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MultigresStack, WorkTree, str, KubeClient, ArgoCD]]:
    workdir = tmp_path_factory.mktemp("argocd")
    stack = MultigresStack(workdir / "stack", progress=lambda line: print(line, flush=True))
    try:
        stack.start()
        kube = stack.kube()
        argocd_module.install(kube, (GITOPS / "health.lua").read_text())
        with GitServer(workdir / "git") as git, \
                ArgoCD(workdir / "argocd", stack.kubeconfig, GITOPS / "plugin.yaml") as argocd:
            tree = git.create("platform")
            try:
                yield stack, tree, git.url("platform"), kube, argocd
            finally:
                print("--- application-controller (tail) ---\n" + argocd.log("application-controller", 3000))
                print("--- repo-server (tail) ---\n" + argocd.log("repo-server", 1500))
                kube.close()
    finally:
        stack.stop()


def _shipped_application(url: str, namespace: str) -> dict[str, Any]:
    """gitops/argocd/application.yaml as we ship it, pointed at the local repository and the stack's
    namespace; the tests ask for each refresh, so no interval matters."""
    doc: dict[str, Any] = yaml.safe_load((GITOPS / "application.yaml").read_text())
    doc["metadata"]["namespace"] = argocd_module.NAMESPACE
    doc["metadata"]["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]  # delete the app: delete the shard
    doc["spec"]["source"]["repoURL"] = url
    doc["spec"]["destination"]["namespace"] = namespace
    return doc


def _vars(shard: dict[str, Any]) -> str:
    """The inventory file the plugin discovers and renders (the vars of playbooks/render.yml)."""
    spec = {"metadata": {"name": facts.name(shard)}, "spec": shard["spec"]}
    return yaml.safe_dump({"multigres_shard": spec}, sort_keys=False)


def _application(kube: KubeClient) -> dict[str, Any]:
    return kube.get(*APPLICATION, argocd_module.NAMESPACE, "multigres-shards") or {}


def _health(kube: KubeClient) -> dict[str, Any]:
    return dict((_application(kube).get("status") or {}).get("health") or {})


def _refresh(kube: KubeClient) -> None:
    kube.merge_patch(*APPLICATION, argocd_module.NAMESPACE, "multigres-shards",
                     {"metadata": {"annotations": {REFRESH: "normal"}}}, field_manager="test")


def _summary(app: dict[str, Any]) -> str:
    status = app.get("status") or {}
    operation = status.get("operationState") or {}
    return str({"sync": status.get("sync"), "health": status.get("health"), "conditions": status.get("conditions"),
                "operation": {k: v for k, v in operation.items() if k in ("phase", "message")}})


def _synced(kube: KubeClient, stack: MultigresStack, commit: str, timeout: float = 600,
            follows_ready: bool = False) -> dict[str, Any]:
    """Until the Application is Synced to `commit` and Healthy. With `follows_ready`, each time it
    says Healthy our shard is read after it and must already be Ready: the health check follows the
    operator, never leads (only for a new shard: a later Ready=False may race a stale Healthy)."""
    def done() -> dict[str, Any] | None:
        app = _application(kube)
        status = app.get("status") or {}
        healthy = (status.get("health") or {}).get("status") == "Healthy"
        if healthy and follows_ready:
            ours = facts.condition(shard_cr(stack), "Ready") or {}
            assert ours.get("status") == "True", ("Healthy before our Ready", _summary(app), ours)
        synced = status.get("sync") or {}
        return app if healthy and synced.get("revision") == commit and synced.get("status") == "Synced" else None

    return wait_for(done, timeout, f"the Application Synced at {commit[:8]} and Healthy", interval=1,
                    last_seen=lambda: _summary(_application(kube)))


def _condition(kube: KubeClient, kind: str, text: str, timeout: float = 300) -> str:
    """Until the Application carries a `kind` condition mentioning `text`; its message."""
    def found() -> str | None:
        for condition in (_application(kube).get("status") or {}).get("conditions") or []:
            if condition.get("type") == kind and text in condition.get("message", ""):
                return str(condition["message"])
        return None

    return wait_for(found, timeout, f"a {kind} condition naming {text!r}", interval=1,
                    last_seen=lambda: _summary(_application(kube)))


def test_argocd_renders_refuses_scales_down_and_deletes_a_shard_from_git(rig) -> None:  # type: ignore[no-untyped-def]
    stack, tree, url, kube, argocd = rig
    shard = stack.sample_shard(replicas=3)
    commit = tree.commit({VARS: _vars(shard)}, "the play shard")
    started = time.monotonic()
    kube.apply(_shipped_application(url, stack.namespace), "test", force=True)
    # ArgoCD calls a kind it has no check for Healthy at once: Progressing is our health.lua's answer.
    progressing = wait_for(lambda: _health(kube).get("status") == "Progressing" and _health(kube), 300,
                           "the Application Progressing on the shard", interval=0.5,
                           last_seen=lambda: _summary(_application(kube)))
    assert f"{keys.SHARD_KIND}:{stack.namespace}/{SHARD}" in progressing.get("message", ""), progressing
    created = _synced(kube, stack, commit, follows_ready=True)
    print(f"[measured] commit -> Application Synced and Healthy (the shard serving): "
          f"{time.monotonic() - started:.1f}s; {_summary(created)}", flush=True)
    stack.wait_serving(SHARD, replicas=3, timeout=600)

    watched = Watched(stack)
    watched.start()
    try:
        # A commit `render` refuses (in the plugin, on the repo server): a ComparisonError with our
        # field path and rule; nothing is applied.
        generation = facts.meta(shard_cr(stack)).get("generation")
        late = copy.deepcopy(shard)
        late["spec"]["backup"].setdefault("schedules", {})["full"] = "61 1 * * 0"
        tree.commit({VARS: _vars(late)}, "back up at minute 61 (refused by render)")
        _refresh(kube)
        message = _condition(kube, "ComparisonError", "spec.backup.schedules.full")
        print(f"[measured] render-refused commit: ComparisonError: {message[-300:]}", flush=True)
        assert "not a valid cron expression" in message, message
        assert facts.meta(shard_cr(stack)).get("generation") == generation

        # A commit the API server refuses (the CRD's grow-only rule): ArgoCD's server-side diff
        # (a dry-run apply, since ServerSideApply=true) fails naming the field; nothing is synced.
        shrunk = copy.deepcopy(shard)
        shrunk["spec"]["pools"]["default"]["storage"] = {"size": "512Mi"}
        tree.commit({VARS: _vars(shrunk)}, "shrink the volumes (refused)")
        _refresh(kube)
        refused = _condition(kube, "ComparisonError", "storage size can only grow")
        print(f"[measured] API-refused commit: ComparisonError: {refused}", flush=True)
        assert "spec.pools[default].storage.size" in refused, refused
        assert facts.meta(shard_cr(stack)).get("generation") == generation
        fixed = tree.commit({VARS: _vars(shard)}, "the play shard again")
        _refresh(kube)
        _synced(kube, stack, fixed)

        # A commit that scales down: our drain, one standby at a time, nothing lost.
        def commit(spec: dict[str, Any]) -> str:
            down = tree.commit({VARS: _vars(spec)}, "scale the play shard to 2")
            _refresh(kube)
            return down

        def restart() -> None:
            argocd.stop()
            argocd.start()
            _refresh(kube)

        took = scale_down_through_the_drain(stack, watched, shard, commit, restart,
                                            lambda down: _synced(kube, stack, down))
        print(f"[measured] scale-down commit -> Application Synced and Healthy: {took:.1f}s", flush=True)
    finally:
        watched.stop()

    # Deleting the Application (with ArgoCD's resources finalizer) deletes the shard; our finalizer
    # lets it go after the cleanup, and only then does the Application go.
    started = time.monotonic()
    kube.delete(*APPLICATION, argocd_module.NAMESPACE, "multigres-shards")
    wait_for(lambda: kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD) is None, 300,
             "the MultigresShard to go", interval=1)
    print(f"[measured] Application deleted -> MultigresShard gone: {time.monotonic() - started:.1f}s", flush=True)
    wait_for(lambda: not _application(kube), 120, "the Application to go", interval=1)
    wait_for(lambda: stack.pods() == [], 300, "the pool pods to go", interval=1)

