"""The operator's fast path against the real API server, ansible-runner and reconcile playbook:
a no-op resync is decided from the caches (no runner, zero writes); a spec change starts exactly one
playbook run, which replays the operator's snapshot and writes what the operator planned; the
standalone playbook still converges the same shard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient

from multigres_pools.operator.outcome import Result
from multigres_pools.playground.localstack import wait_for
from tests.integration.operator.rig import LiveOperator, shard_doc

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[3]
SHARDS = int(os.environ.get("FAST_PATH_SHARDS", "20"))
# What a pass writes; the PDB is left out of the comparison because the disruption controller
# updates its status on its own.
WRITTEN_KINDS = [("v1", "Pod"), ("v1", "PersistentVolumeClaim"), ("v1", "Service"), ("v1", "ConfigMap"),
                 ("apps/v1", "Deployment"), ("v1", "Secret"), (keys.API_GROUP_VERSION, keys.SHARD_KIND)]


def versions(client: KubeClient, namespace: str) -> dict[tuple[str, str], str]:
    out = {}
    for api_version, kind in WRITTEN_KINDS:
        for obj in client.list(api_version, kind, namespace, metadata_only=kind == "Secret"):
            out[(kind, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
    out[("Event", "*")] = str(len(client.list("v1", "Event", namespace)))
    return out


def world(kubelet, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """The kubelet and the volume binder, which do not run in the harness."""
    kubelet.mark_all_ready(namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
    kubelet.bind_all_pvcs(namespace)
    kubelet.mark_deployments_available(namespace)


def converged(op: LiveOperator, names: list[str]) -> bool:
    def one(name: str) -> bool:
        verdict = op.ctl.verdicts.get((op.namespace, name))
        outcome = op.ctl.outcomes.get((op.namespace, name))
        return (verdict is not None and not verdict.run and outcome is not None
                and outcome.result is Result.CONVERGED)
    return op.call(lambda: all(one(n) for n in names)) and op.idle()


def settle(op: LiveOperator, kubelet, names: list[str], timeout: float = 600) -> None:  # type: ignore[no-untyped-def]
    """Let the world answer, then resync, until a resync finds nothing to do for any shard."""
    def check() -> bool:
        world(kubelet, op.namespace)
        wait_for(op.idle, 120, "the operator to be idle", interval=0.2)
        op.resync()
        wait_for(op.idle, 120, "the resync", interval=0.2)
        return converged(op, names)
    wait_for(check, timeout, f"{len(names)} shards to converge", interval=1)


def test_noop_resync_starts_no_runner_and_a_spec_change_one(kube, namespace, kubelet, kube_client,  # type: ignore[no-untyped-def]
                                                               tmp_path) -> None:
    names = [f"s{i:02d}" for i in range(SHARDS)]
    for name in names:
        kube_client.apply(shard_doc(namespace, name), "test")
    op = LiveOperator(kube.kubeconfig, namespace, tmp_path / "runner")
    try:
        settle(op, kubelet, names)
        assert op.requests().get("list", 0) == 0, op.requests()  # every list came from the caches

        # 1. A resync of converged shards: decided in process, no runner, nothing written (settling
        # wrote statuses in process: only what the resync adds counts).
        def writes() -> int:
            return sum(n for verb, n in op.requests().items() if verb not in ("get", "list"))

        before, runs, decided = versions(kube_client, namespace), op.runner_runs(), op.decisions("no-op")
        written = writes()
        op.resync()
        wait_for(lambda: op.decisions("no-op") >= decided + SHARDS and op.idle(), 120, "the resync")
        assert op.runner_runs() == runs
        assert versions(kube_client, namespace) == before
        assert writes() == written

        # 2. A spec change: one playbook run, which writes what the operator planned, replaying its snapshot.
        target = (namespace, names[0])
        passes = op.ctl.playbook_passes[target]
        kube_client.apply(shard_doc(namespace, names[0], replicas=3), "test")
        wait_for(lambda: op.ctl.playbook_passes[target] > passes and op.idle(), 120, "the playbook pass")
        op.resync()  # the shard is decided again after its pass: nothing is left to write
        wait_for(op.idle, 120, "the resync after the pass")
        verdict, report = op.ctl.handed[target], op.ctl.reports[target]
        res: dict[str, Any] = report.module_result or {}
        assert verdict.reason == "actions", verdict
        planned = [line for line in verdict.plan if not line.startswith("waiting:")]
        done = [f"{a['verb']} {a['kind']}/{a['name']}" for a in res["actions"]]
        assert [line.split(":")[0] for line in planned] == [line.split(":")[0] for line in res["plan"]
                                                           if not line.startswith("waiting:")], (planned, res["plan"])
        assert any(a["kind"] == "Pod" and a["verb"] == "apply" for a in res["actions"]), done
        assert res["replayed"] > 0 and res["requests"].get("list", 0) == 0, res["requests"]
        assert op.ctl.playbook_passes[target] == passes + 1
        assert sum(op.ctl.playbook_passes.values()) - passes - 1 == sum(
            n for k, n in op.ctl.playbook_passes.items() if k != target)  # no other shard ran
    finally:
        op.stop()

    # 3. The standalone playbook (no operator, no snapshot) converges the same shard.
    kube_client.apply(shard_doc(namespace, names[0], replicas=4), "test")
    env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig), "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "playbooks/reconcile.yml",
                          "-e", json.dumps({"shard_name": names[0], "shard_namespace": namespace})],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    pods = kube_client.list("v1", "Pod", namespace, f"{keys.LABEL_CLUSTER}={names[0]},"
                                                f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
    assert len(pods) == 4
