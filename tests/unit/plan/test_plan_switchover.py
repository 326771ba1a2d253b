"""The switchover request (plan/switchover.py): `any` drains the primary for a switchover once the
shard is settled; everything else is refused with the reason, the request is removed and the
decision recorded, and nothing else changes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, drains, events, healthy, live_pod, observed, plan, shard_cr

STAMP = "2026-05-01T12:00:00Z"


def _requested(value: str, pods: list[Any], pvcs: list[Any], state: dict[str, Any] | None = None) -> Any:
    annotations = {keys.ANN_SWITCHOVER_REQUEST: value}
    if state is not None:
        annotations[keys.ANN_SWITCHOVER_STATE] = json.dumps(state)
    return observed(pods, pvcs, cr=shard_cr(annotations=annotations))


def _decision(result: Any) -> dict[str, Any]:
    """The one patch of the MultigresShard: the request removed, the decision recorded."""
    (patch,) = [a for a in result.actions if a.kind == keys.SHARD_KIND and a.verb == "patch"]
    ann = patch.body["metadata"]["annotations"]
    assert ann[keys.ANN_SWITCHOVER_REQUEST] is None
    decided: dict[str, Any] = json.loads(ann[keys.ANN_SWITCHOVER_STATE])
    return decided


def _name(pods: list[Any], i: int) -> str:
    return str(pods[i]["metadata"]["name"])


def test_any_drains_the_primary_for_a_switchover_and_records_it() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), _requested("any", pods, pvcs), NOW)
    assert drains(result) == {_name(pods, 0): keys.DrainReason.SWITCHOVER}
    drain = next(a for a in result.actions if a.kind == "Pod")
    assert keys.ANN_SWITCHOVER in drain.body["metadata"]["annotations"]  # the agent's primary drain
    decided = _decision(result)
    assert decided["decision"] == "Accepted" and decided["from"] == _name(pods, 0)
    assert decided["fromUid"] == pods[0]["metadata"]["uid"] and decided["at"] == STAMP
    assert "DrainRequested" in events(result) and "SwitchoverRefused" not in events(result)


def _refused(result: Any) -> str:
    """The request's whole effect: one patch of the MultigresShard and a Warning, no drain."""
    assert [(a.kind, a.verb) for a in result.switchover.actions] == [(keys.SHARD_KIND, "patch"),
                                                                      (keys.SHARD_KIND, "event")]
    assert result.switchover.actions[1].event_reason == "SwitchoverRefused"
    assert keys.DrainReason.SWITCHOVER not in drains(result).values()
    decided = _decision(result)
    assert decided["decision"] == "Refused" and "from" not in decided
    message: str = decided["message"]
    assert result.switchover.refused == message
    return message


def test_a_named_pod_is_checked_then_refused_on_v0_1_which_cannot_elect_it() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    message = _refused(plan(desired(dp), _requested(_name(pods, 2), pods, pvcs), NOW))
    assert "cannot elect a chosen pod" in message and "'any'" in message


@pytest.mark.parametrize(("value", "expected"), [
    ("nope", "'nope' is not a pod of this shard (its pods: "),
    ("", "the value is empty"),
    ("PRIMARY", "is already the primary"),
])
def test_bad_targets_are_refused_with_the_reason(value: str, expected: str) -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    target = _name(pods, 0) if value == "PRIMARY" else value
    assert expected in _refused(plan(desired(dp), _requested(target, pods, pvcs), NOW))


def test_a_fenced_or_not_ready_target_is_refused_and_any_needs_a_standby_that_can_take_over() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    fenced = dataclasses.replace(dp, fenced=frozenset({_name(pods, 1)}))
    pods[2] = live_pod(dp, 2, ready=False, role=keys.Role.REPLICA)
    assert "is fenced (spec.pools.main.fenced)" in _refused(plan(desired(fenced), _requested(_name(pods, 1), pods,
                                                                                                pvcs), NOW))
    assert f"{_name(pods, 2)} is not Ready" in _refused(plan(desired(fenced), _requested(_name(pods, 2), pods, pvcs),
                                                                 NOW))
    # For `any`, pod 2 not Ready makes the pool busy: that is the reason.
    assert "pools are changing: main/z1" in _refused(plan(desired(fenced), _requested("any", pods, pvcs), NOW))


def test_any_is_refused_when_no_standby_can_take_over() -> None:
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp)
    fenced = dataclasses.replace(dp, fenced=frozenset({_name(pods, 1)}))
    message = _refused(plan(desired(fenced), _requested("any", pods, pvcs), NOW))
    assert message.startswith("no standby can take over") and f"{_name(pods, 1)} is fenced" in message
    single = desired_pool(replicas=1)
    pods, pvcs = healthy(single)
    assert "the shard has no other pod" in _refused(plan(desired(single), _requested("any", pods, pvcs), NOW))


def test_refused_while_a_drain_or_a_rolling_update_runs() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, drain=keys.DrainState.DRAINING, reason="scale-down")
    assert f"a drain is running: {_name(pods, 2)} (scale-down)" in _refused(
        plan(desired(dp), _requested("any", pods, pvcs), NOW))
    rolled = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = healthy(rolled)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"
    result = plan(desired(rolled), _requested("any", pods, pvcs), NOW)
    assert "a rolling update is in progress (0/3 pods updated)" in _decision(result)["message"]


def test_a_request_left_while_the_switchover_drain_runs_is_recorded_as_that_switchover() -> None:
    """The decision's patch can meet a conflict while the drain request went through: the next pass
    must not refuse the request for the drain it started itself."""
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[0] = live_pod(dp, 0, role=keys.Role.PRIMARY, drain=keys.DrainState.DRAINING, reason="switchover")
    result = plan(desired(dp), _requested("any", pods, pvcs), NOW)
    assert drains(result) == {} and events(result) == []
    decided = _decision(result)
    assert decided["decision"] == "Accepted" and decided["fromUid"] == pods[0]["metadata"]["uid"]


def test_no_request_no_action_and_a_paused_shard_keeps_it() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    assert plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW).actions == []
    cr = shard_cr(annotations={keys.ANN_SWITCHOVER_REQUEST: "any", keys.ANN_PAUSED: "true"})
    paused = plan(desired(dp), observed(pods, pvcs, cr=cr), NOW)
    assert paused.actions == [] and drains(dataclasses.replace(paused, actions=paused.withheld))


def test_status_shows_the_decision_and_how_far_it_got() -> None:
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    old = pods[0]["metadata"]
    accepted = {"request": "any", "decision": "Accepted", "message": "draining the primary", "at": STAMP,
                "from": old["name"], "fromUid": old["uid"]}
    seen = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_SWITCHOVER_STATE: json.dumps(accepted)}))
    shown = status.compute(desired(dp), seen, plan(desired(dp), seen, NOW), stamp=STAMP)["switchover"]
    assert shown["state"] == "InProgress" and "fromUid" not in shown
    # The old pod is gone (recreated under its name, a new uid) and pod 1 leads.
    pods = [live_pod(dp, 0, role=keys.Role.REPLICA), live_pod(dp, 1, role=keys.Role.PRIMARY), pods[2]]
    seen = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_SWITCHOVER_STATE: json.dumps(accepted)}))
    shown = status.compute(desired(dp), seen, plan(desired(dp), seen, NOW), stamp=STAMP)["switchover"]
    assert shown["state"] == "Completed" and shown["primary"] == _name(pods, 1)
    model.SwitchoverStatus.model_validate(shown)  # what the CRD schema is generated from
    refused = {"request": "x", "decision": "Refused", "message": "no", "at": STAMP}
    seen = observed(pods, pvcs, cr=shard_cr(annotations={keys.ANN_SWITCHOVER_STATE: json.dumps(refused)}))
    assert status.compute(desired(dp), seen, plan(desired(dp), seen, NOW), stamp=STAMP)["switchover"]["state"] \
        == "Refused"


def test_a_switchover_the_agent_blocks_is_cancelled_and_recorded_as_refused() -> None:
    """A primary without a standby it may hand over to (the durability policy, no streaming synchronous
    standby): the agent blocks the drain in `requested`; the engine cancels it and says why, so the
    request does not hold every other drain of the shard."""
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp)
    pods[0] = live_pod(dp, 0, role=keys.Role.PRIMARY, drain=keys.DrainState.REQUESTED, reason="switchover",
                       switchover=STAMP)
    pods[0]["metadata"]["annotations"][keys.ANN_DRAIN_BLOCKED] = "no-connected-sync-standby-for-failover"
    accepted = {"request": "any", "decision": "Accepted", "message": "draining", "at": STAMP,
                "from": _name(pods, 0), "fromUid": pods[0]["metadata"]["uid"]}
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr(annotations={
        keys.ANN_SWITCHOVER_STATE: json.dumps(accepted)})), NOW)
    assert "DrainCancelled" in events(result) and "SwitchoverRefused" in events(result)
    cancel = next(a for a in result.actions if a.kind == "Pod" and a.verb == "patch")
    assert cancel.body["metadata"]["annotations"][keys.ANN_DRAIN_STATE] is None
    decided = _decision(result)
    assert decided["decision"] == "Refused" and "no-connected-sync-standby-for-failover" in decided["message"]
    assert decided["from"] == _name(pods, 0)
    # Not blocked (yet): nothing is cancelled.
    del pods[0]["metadata"]["annotations"][keys.ANN_DRAIN_BLOCKED]
    waiting = plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert "DrainCancelled" not in events(waiting) and waiting.switchover.actions == []
