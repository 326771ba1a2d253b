"""Fencing in the engine: fenced pods are not healthy replicas for the drain gates, are never drained
or replaced for being fenced, and the shard conditions repeat the agent's pod condition Fenced."""

from __future__ import annotations

import dataclasses

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.plan.shard import plan
from ansible_collections.multigres.pools.plugins.module_utils.status import fencing
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, drains, healthy, live_pod, live_pvc, observed, shard_cr


def _name(dp, i: int) -> str:  # type: ignore[no-untyped-def]
    return str(dp.pod(i)["metadata"]["name"])


def _fenced(dp, *indexes: int):  # type: ignore[no-untyped-def]
    return dataclasses.replace(dp, fenced=frozenset(_name(dp, i) for i in indexes))


def _with_condition(pod, status_: str, reason: str, message: str = ""):  # type: ignore[no-untyped-def]
    pod.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": keys.POD_CONDITION_FENCED, "status": status_, "reason": reason, "message": message})
    return pod


def test_a_fenced_pod_is_neither_drained_nor_replaced_for_being_fenced() -> None:
    dp = _fenced(desired_pool(replicas=3), 1)
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert result.actions == [] or all(a.name != _name(dp, 1) for a in result.actions)
    assert drains(result) == {}


def test_scale_down_health_gate_does_not_count_a_fenced_pod() -> None:
    dp = _fenced(desired_pool(replicas=2), 1)
    pods, pvcs = healthy(dp, 3)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {}
    assert result.blocked and f"{_name(dp, 1)} (fenced)" in result.blocked[0]
    # Unfenced, the same scale-down starts.
    assert list(drains(plan(desired(dataclasses.replace(dp, fenced=frozenset())), observed(pods, pvcs),
                            NOW)).values()) == ["scale-down"]


def test_decommission_waits_while_the_remaining_replicas_include_a_fenced_one() -> None:
    dp = desired_pool(replicas=3)
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 2)}), fenced=frozenset({_name(dp, 1)}))
    pods, pvcs = healthy(dp)
    pods.append(live_pod(dp, 3, role=keys.Role.REPLICA))
    pvcs.append(live_pvc(dp, 3))
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {}
    assert any("waits for its replacement: 2/3" in w for w in result.waiting)


def test_shard_conditions_repeat_the_pod_conditions_and_name_unknown_pods() -> None:
    dp = _fenced(desired_pool(replicas=3), 1, 2)
    dp = dataclasses.replace(dp, fenced=dp.fenced | {"not-a-pod"})
    pods, _pvcs = healthy(dp)
    _with_condition(pods[1], "True", "Fenced", "out")
    _with_condition(pods[2], "False", "DurabilityPolicy", f"{_name(dp, 2)}: would fall below the policy")
    fenced, refused = fencing.conditions(desired(dp), pods)
    assert fenced["type"] == keys.ShardCondition.FENCED and fenced["status"] == "True"
    assert _name(dp, 1) in fenced["message"] and _name(dp, 2) not in fenced["message"]
    assert refused["type"] == keys.ShardCondition.FENCE_REFUSED and refused["status"] == "True"
    assert refused["reason"] == "UnknownPod"
    assert "spec.pools.main.fenced: 'not-a-pod' is not a pod of pool main" in refused["message"]
    assert "would fall below the policy" in refused["message"]


def test_a_listed_pod_the_agent_has_not_reported_is_pending_not_refused() -> None:
    dp = _fenced(desired_pool(replicas=3), 1)
    pods, _pvcs = healthy(dp)
    fenced, refused = fencing.conditions(desired(dp), pods)
    assert fenced["status"] == "False" and "waiting for the agent" in fenced["message"]
    assert refused["status"] == "False" and refused["reason"] == "NoneRefused"


def test_status_carries_both_conditions() -> None:
    dp = _fenced(desired_pool(replicas=3), 1)
    pods, pvcs = healthy(dp)
    _with_condition(pods[1], "True", "Fenced")
    obs = observed(pods, pvcs, cr=shard_cr())
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp="2026-05-01T12:00:00Z")
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["Fenced"]["status"] == "True" and conds["FenceRefused"]["status"] == "False"
    assert st["phase"] == "Healthy"  # fencing is not a degradation of the shard's spec
