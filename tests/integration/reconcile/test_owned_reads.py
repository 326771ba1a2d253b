"""`read_owned_by_name` (what watches.yaml turns on under the Ansible Operator): after a pass on a
converged MultigresShard, exactly one extra GET per kind that holds an object the shard owns, and
nothing else; without it, none."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.observe import INFRA_KINDS
from ansible_collections.multigres.pools.plugins.module_utils.kube.owned_reads import owned_by
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.integration.reconcile.rig import spec


def test_one_get_per_owned_kind_and_no_write(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    cr = rig.client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    uid = facts.uid(cr) or ""
    kinds = [("v1", "Pod"), ("v1", "PersistentVolumeClaim"), *INFRA_KINDS, ("v1", "Secret")]
    owned = [kind for api_version, kind in kinds
             if any(owned_by(o, uid) for o in rig.client.list(api_version, kind, rig.namespace))]
    assert {"Pod", "Service"} <= set(owned)  # PVCs are owned only when whenDeleted is Delete
    plain = rig.run(name="demo")
    rig.client.counts.clear()
    reading = run_pass(rig.client, Request(namespace=rig.namespace, name="demo", read_owned_by_name=True))
    assert not reading.failed and reading.writes == 0 and plain.writes == 0
    assert reading.requests.get("get", 0) - plain.requests.get("get", 0) == len(owned)
    assert reading.requests.get("list") == plain.requests.get("list")
