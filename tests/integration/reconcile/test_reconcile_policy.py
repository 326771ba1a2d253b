"""The operator's allow-lists through the engine on the real apiserver: a MultigresShard naming a
disallowed Secret is refused with the field named and nothing of it is created; once the value is
allowed, the same shard converges."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

from tests.integration.reconcile.rig import spec

pytestmark = pytest.mark.cluster


def test_a_disallowed_secret_is_refused_and_nothing_is_created(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr({**spec(2), "images": {"imagePullSecrets": [{"name": "someone-elses-secret"}]}})
    policy = SpecPolicy.of(secrets=["db-*"])
    result = run_pass(rig.client, Request(namespace=rig.namespace, name="demo", policy=policy))
    assert result.failed
    assert result.errors == ["spec.images.imagePullSecrets[0].name: Secret 'someone-elses-secret' is not allowed "
                             "by the operator's configuration (allowed: db-*)"]
    status = rig.cr()["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert status["phase"] == "Degraded" and conditions["Stalled"]["status"] == "True"
    assert conditions["ConfigurationValid"]["status"] == "False"
    assert conditions["ConfigurationValid"]["message"].startswith("spec.images.imagePullSecrets[0].name:")
    assert rig.pods() == {} and rig.pvcs() == {}
    assert keys.FINALIZER_SHARD not in (rig.cr()["metadata"].get("finalizers") or [])
    rig.client.counts.clear()
    again = run_pass(rig.client, Request(namespace=rig.namespace, name="demo", policy=policy))
    assert again.failed and again.writes == 0  # the refusal is already reported

    rig.update_cr({"images": {"imagePullSecrets": [{"name": "db-pull"}]}})
    allowed = run_pass(rig.client, Request(namespace=rig.namespace, name="demo", policy=policy))
    assert not allowed.failed, allowed.msg
    assert len(rig.pods()) == 2
