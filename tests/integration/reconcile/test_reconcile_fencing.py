"""Fencing's bad input and refusals on the real apiserver: the CRD refuses a malformed list, an unknown
name is reported and ignored, the agent's refusals (pod condition Fenced=False) reach the shard as
FenceRefused naming the pod and why, and nothing is created, drained or deleted because of them.
(The fence itself needs real Multigres: tests/integration/multigres/day2/test_day2_on_multigres.py.)"""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeError
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _pod(i: int) -> str:
    return naming.pod_name(SID, POOL, CELL, i)


def _condition(rig, ctype: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cr = rig.cr()
    assert cr is not None
    return next(c for c in cr["status"]["conditions"] if c["type"] == ctype)


def _agent_reports(rig, pod: str, status: str, reason: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """What the agent writes (agent/fence.py): the pod condition Fenced."""
    current = [c for c in (rig.pods()[pod].get("status") or {}).get("conditions") or []
               if c.get("type") != keys.POD_CONDITION_FENCED]
    rig.client.merge_patch("v1", "Pod", rig.namespace, pod, {"status": {"conditions": [
        *current, {"type": keys.POD_CONDITION_FENCED, "status": status, "reason": reason, "message": message}]}},
        field_manager="test", subresource="status")


def test_the_crd_refuses_duplicate_names(rig, shard_crd):  # type: ignore[no-untyped-def]
    with pytest.raises(KubeError) as exc:
        rig.create_cr(spec(3, fenced=[_pod(1), _pod(1)]))
    assert "fenced" in str(exc.value) and "Duplicate" in str(exc.value)


def test_unknown_names_and_agent_refusals_are_reported_and_change_nothing(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(3))
    rig.settle(name="demo")
    rig.agent.publish_roles(primary=_pod(0))
    before = {n: facts.uid(p) for n, p in rig.pods().items()}

    rig.update_cr({"pools": {POOL: {"fenced": ["demo-typo-1", _pod(0), _pod(1)]}}})
    rig.settle(name="demo")
    refused = _condition(rig, "FenceRefused")
    assert refused["status"] == "True" and refused["reason"] == "UnknownPod"
    assert f"spec.pools.{POOL}.fenced: 'demo-typo-1' is not a pod of pool {POOL}" in refused["message"]
    fenced = _condition(rig, "Fenced")
    assert fenced["status"] == "False" and "waiting for the agent" in fenced["message"]

    # The agent refuses the primary and fences the standby; the shard repeats both.
    _agent_reports(rig, _pod(0), "False", "IsPrimary", f"{_pod(0)}: it is the primary: nothing changed")
    _agent_reports(rig, _pod(1), "True", "Fenced", f"{_pod(1)}: out of the synchronous set")
    rig.settle(name="demo")
    refused = _condition(rig, "FenceRefused")
    assert f"{_pod(0)}: it is the primary" in refused["message"]
    fenced = _condition(rig, "Fenced")
    assert fenced["status"] == "True" and _pod(1) in fenced["message"] and _pod(0) not in fenced["message"]
    assert {n: facts.uid(p) for n, p in rig.pods().items()} == before  # nothing replaced or deleted
    assert rig.drained_pods() == []
    assert rig.cr()["status"]["phase"] == "Healthy"

    # A scale-down now: the fenced standby does not count as a healthy replica, so the drain waits.
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 2}}})
    for _ in range(3):
        rig.run(name="demo")
        rig.world()
    blocked = _condition(rig, "ScaleDownBlocked")
    assert blocked["status"] == "True" and f"{_pod(1)} (fenced)" in blocked["message"]
    assert rig.drained_pods() == [] and not any(facts.annotations(p).get(keys.ANN_DRAIN_STATE)
                                                for p in rig.pods().values())

    # Unlisted: both conditions clear and the scale-down goes ahead.
    rig.update_cr({"pools": {POOL: {"fenced": []}}})
    rig.run(name="demo")
    assert _condition(rig, "FenceRefused")["status"] == "False"
    assert _condition(rig, "Fenced")["status"] == "False"
