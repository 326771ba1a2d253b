"""The operator's allow-lists (spec/policy.py) end to end: the in-process decision and the playbook
run it starts both refuse a MultigresShard naming a disallowed image, the status names the field,
no pod is created, and the refusal settles (no run after the status is written)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

from multigres_pools.operator.outcome import Result
from multigres_pools.playground.localstack import wait_for
from tests.integration.operator.rig import LiveOperator, shard_doc

pytestmark = pytest.mark.cluster


def _conditions(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    cr = client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name) or {}
    return {c["type"]: c for c in (cr.get("status") or {}).get("conditions") or []}


def test_a_disallowed_image_is_refused_by_the_operator(kube, namespace, kube_client, tmp_path):  # type: ignore[no-untyped-def]
    doc = shard_doc(namespace, "evil")
    doc["spec"]["images"] = {"postgres": "evil.example/postgres:17"}
    kube_client.apply(doc, "test")
    op = LiveOperator(kube.kubeconfig, namespace, tmp_path / "runner",
                      policy=SpecPolicy.of(images=["ghcr.io/multigres/*"]))
    try:
        def refused() -> bool:
            cond = _conditions(kube_client, namespace, "evil").get("ConfigurationValid") or {}
            return cond.get("status") == "False"
        wait_for(refused, 180, "ConfigurationValid=False on the refused shard", interval=0.5)
        wait_for(op.idle, 120, "the operator to be idle", interval=0.2)
        conditions = _conditions(kube_client, namespace, "evil")
        assert conditions["ConfigurationValid"]["message"].startswith(
            "spec.images.postgres: image 'evil.example/postgres:17' is not allowed")
        assert conditions["Stalled"]["status"] == "True"
        assert kube_client.list("v1", "Pod", namespace) == []
        # Settled: a resync decides in process that the refusal is already reported, and runs nothing.
        runs = op.runner_runs()
        op.resync()
        wait_for(op.idle, 120, "the resync", interval=0.2)
        assert op.runner_runs() == runs
        outcome = op.call(lambda: op.ctl.outcomes.get((namespace, "evil")))
        assert outcome is not None and outcome.result is Result.INVALID
    finally:
        op.stop()
