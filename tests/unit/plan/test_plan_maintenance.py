"""Node maintenance (plan/maintenance.py): pool pods leave cordoned nodes through our drain, one at a
time in the shard, replicas first, the primary last, each only once the previous replacement is Ready."""

from __future__ import annotations

import dataclasses
import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, drains, healthy, live_pod, observed, plan

STAMP = "2026-05-01T12:00:00Z"  # NOW as the engine writes it


def _on(pods, *nodes):  # type: ignore[no-untyped-def]
    """Place pod i on nodes[i]."""
    for pod, node in zip(pods, nodes, strict=True):
        pod["spec"]["nodeName"] = node
    return pods


def _cordoned(pods, pvcs, *nodes):  # type: ignore[no-untyped-def]
    return dataclasses.replace(observed(pods, pvcs), cordoned=frozenset(nodes))


def test_nothing_moves_while_no_node_of_the_shard_is_cordoned():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _on(pods, "a", "b", "c")
    result = plan(desired(dp), _cordoned(pods, pvcs, "elsewhere"), NOW)
    assert drains(result) == {} and not result.maintenance.in_progress


def test_a_standby_on_a_cordoned_node_is_drained_for_node_maintenance():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _on(pods, "a", "b", "c")
    result = plan(desired(dp), _cordoned(pods, pvcs, "b"), NOW)
    assert drains(result) == {pods[1]["metadata"]["name"]: "node-maintenance"}
    assert "its node b is cordoned" in result.actions[0].reason
    assert result.maintenance.leaving == [f"{pods[1]['metadata']['name']} (b)"]


def test_replicas_first_primary_last_with_a_switchover_one_at_a_time():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _on(pods, "n", "n", "n")  # one node holds the whole pool
    first = plan(desired(dp), _cordoned(pods, pvcs, "n"), NOW)
    assert drains(first) == {pods[1]["metadata"]["name"]: "node-maintenance"}

    # Only the primary is left on the node: it goes last, with a switchover request.
    _on(pods, "n", "m", "m")
    last = plan(desired(dp), _cordoned(pods, pvcs, "n"), NOW)
    assert drains(last) == {pods[0]["metadata"]["name"]: "node-maintenance"}
    annotations = last.actions[0].body["metadata"]["annotations"]
    assert annotations[keys.ANN_SWITCHOVER] == STAMP and "primary last" in last.actions[0].reason


def test_the_next_pod_waits_for_the_replacement_and_says_why_it_is_not_scheduled():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _on(pods, "n", "n", "n")
    # Pod 1 was drained and recreated: Pending, the scheduler finds no node (its volume is bound to n).
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA, phase="Pending")
    pods[1]["status"]["conditions"].append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "0/1 nodes are available: 1 node(s) were unschedulable."})
    result = plan(desired(dp), _cordoned(pods, pvcs, "n"), NOW)
    assert drains(result) == {}
    waiting = result.waiting[0]  # the cause leads what the pools wait for
    assert waiting.startswith("node maintenance (2 pod(s) on cordoned nodes n)")
    assert "0/1 nodes are available: 1 node(s) were unschedulable; uncordon the node" in waiting
    assert result.requeue_after > 0
    assert status.compute(desired(dp), observed(pods, pvcs), result, stamp=STAMP)["phase"] == "Progressing"


def test_maintenance_goes_before_a_rolling_update_and_holds_it():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = healthy(dp)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"
    _on(pods, "a", "b", "c")
    result = plan(desired(dp), _cordoned(pods, pvcs, "c"), NOW)
    assert drains(result) == {pods[2]["metadata"]["name"]: "node-maintenance"}
    assert "rolling update (0/3 pods updated) waits for node maintenance" in result.waiting


def test_no_maintenance_window_holds_it_back():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _on(pods, "a", "b", "c")
    # NOW is a Friday noon; the only window is on Saturdays.
    closed = dataclasses.replace(desired(dp), windows=(maintenance.window(["Sat"], "02:00", dt.timedelta(hours=2)),))
    result = plan(closed, _cordoned(pods, pvcs, "c"), NOW)
    assert drains(result) == {pods[2]["metadata"]["name"]: "node-maintenance"}


def test_a_requested_drain_is_cancelled_when_the_node_is_uncordoned():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, drain="requested", reason="node-maintenance")
    _on(pods, "a", "b", "c")
    result = plan(desired(dp), _cordoned(pods, pvcs), NOW)
    cancel = [a for a in result.actions if a.verb == "patch" and a.name == pods[2]["metadata"]["name"]]
    assert cancel and "its node c is schedulable again" in cancel[0].reason
