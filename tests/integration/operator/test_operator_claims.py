"""Claims (state/claims.py) through the operator: its in-process decision reads the other shards from
its cache, the playbook run it starts replays that answer, and both refuse the younger of two
MultigresShards on one topology root; the older one runs, the younger creates nothing."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.operator.outcome import Result
from multigres_pools.playground.localstack import wait_for
from tests.integration.operator.rig import LiveOperator, shard_doc

pytestmark = pytest.mark.cluster


def test_the_younger_of_two_shards_on_one_topology_root_is_refused(kube, namespace, kube_client, tmp_path):  # type: ignore[no-untyped-def]
    kube_client.apply(shard_doc(namespace, "orders"), "test")
    copied = shard_doc(namespace, "orders-copy")
    copied["spec"]["globalTopoServer"] = shard_doc(namespace, "orders")["spec"]["globalTopoServer"]  # left as it was
    kube_client.apply(copied, "test")
    op = LiveOperator(kube.kubeconfig, namespace, tmp_path / "runner")
    try:
        def refused() -> bool:
            cr = kube_client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, "orders-copy") or {}
            cond = next((c for c in (cr.get("status") or {}).get("conditions") or []
                         if c["type"] == keys.ShardCondition.CONFIGURATION_VALID), {})
            return cond.get("status") == "False" and cond["message"].startswith("spec.globalTopoServer:")
        wait_for(refused, 180, "ConfigurationValid=False on the copy", interval=0.5)
        wait_for(lambda: len(kube_client.list("v1", "Pod", namespace, f"{keys.LABEL_APP_INSTANCE}=orders")) == 2,
                 180, "the older shard's pods", interval=0.5)
        wait_for(op.idle, 120, "the operator to be idle", interval=0.2)
        assert kube_client.list("v1", "Pod", namespace, f"{keys.LABEL_APP_INSTANCE}=orders-copy") == []
        outcome = op.call(lambda: op.ctl.outcomes.get((namespace, "orders-copy")))
        assert outcome is not None and outcome.result is Result.INVALID
        assert f"MultigresShard {namespace}/orders's" in outcome.message, outcome.message
    finally:
        op.stop()
