"""GitOps health over the life of a shard: the engine writes the status on the real apiserver, and
ArgoCD's Lua and Flux's CEL expressions (real evaluators, tests/helpers/gitops_health.py) judge the
object as the apiserver serves it. With UPDATE_GITOPS_CAPTURES=1 the objects are written to
tests/unit/render/gitops_captures.yaml, which the unit suite replays."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass

from multigres_pools.operator.invalid import InvalidSpecReporter
from tests.helpers import gitops_health as gh
from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _refuse(rig) -> str:  # type: ignore[no-untyped-def]
    """One pass that must fail on the spec, as the operator runs it (the CR drives it)."""
    rig.client.counts.clear()
    result = run_pass(rig.client, Request(namespace=rig.namespace, name="demo"))
    assert result.failed and result.errors, result.msg
    assert not [a for a in result.actions if a["verb"] != "event"]  # nothing but the status was written
    return result.errors[0]


def test_health_at_every_moment_of_a_shard(rig, shard_crd, expandable_class, kube):  # type: ignore[no-untyped-def]
    moments: dict[str, dict] = {}
    storage = {"size": "1Gi", "class": expandable_class}
    rig.create_cr(spec(2, storage=storage))
    moments["created"] = rig.cr()
    assert moments["created"]["status"] == {}  # the CRD's default: CEL can read status.* at once

    rig.run(name="demo")
    moments["progressing"] = rig.cr()
    rig.settle(name="demo")
    moments["converged"] = rig.cr()

    for i in range(2):  # an administrator grows the volumes by hand
        rig.client.merge_patch("v1", "PersistentVolumeClaim", rig.namespace, naming.data_pvc_name(SID, POOL, CELL, i),
                               {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}, field_manager="admin")
    rig.update_cr({"postgresConfig": {"work_mem": "8MB"}})  # generation 2: accepted by the CRD
    assert "1Gi is smaller than PVC" in _refuse(rig)
    moments["refused-live"] = rig.cr()

    rig.update_cr({"pools": {POOL: {"storage": {"size": "2Gi"},
                                    "postgres": {"resources": {"requests": {"memory": "1e1.5"}}}}}})
    assert "exponent must be a whole number" in _refuse(rig)  # the CRD's pattern lets it through
    moments["refused-invalid"] = rig.cr()

    rig.update_cr({"pools": {POOL: {"postgres": {"resources": {"requests": {"memory": "1e2.5"}}}}}})
    InvalidSpecReporter(rig.client)(rig.namespace, "demo", "spec.pools.main.postgres: refused")
    moments["refused-by-operator"] = rig.cr()

    rig.update_cr({"pools": {POOL: {"postgres": {"resources": {"requests": {"memory": "1Gi"}}}}}})
    rig.settle(name="demo")
    assert gh.argocd_health(rig.cr())[0] == "Healthy"
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    rig.run(name="demo")
    moments["deleting"] = rig.cr()

    for moment, obj in moments.items():
        argocd, flux = gh.argocd_health(obj), gh.flux_health(obj)
        assert (argocd[0], flux) == gh.EXPECTED[moment], (moment, argocd, flux, obj.get("status"))
        if moment.startswith("refused"):
            status = obj["status"]
            assert status["observedGeneration"] == obj["metadata"]["generation"] and status["phase"] == "Degraded"
            assert argocd[1] == status["message"] or argocd[1] in status["message"]
    if os.environ.get("UPDATE_GITOPS_CAPTURES"):
        gh.CAPTURES.write_text(
            "# Written by tests/integration/reconcile/test_gitops_health.py (UPDATE_GITOPS_CAPTURES=1).\n"
            + yaml.safe_dump({m: gh.capture(o) for m, o in moments.items()}, sort_keys=True))
