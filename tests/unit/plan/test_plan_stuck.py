"""A pod the agent marks as stuck (its PostgreSQL stays down, keys.ANN_POSTGRES_STUCK) is drained so it
is recreated on its volume (plan/stuck.py): at once, one at a time in the shard, standbys before the
primary, never beside another drain, and the request is withdrawn when PostgreSQL runs again first."""

from __future__ import annotations

import dataclasses
import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance

from .plan_factories import NOW, desired, desired_pool, drains, healthy, live_pod, live_pvc, observed, plan

SINCE = "2026-05-01T11:55:00Z"
REASON = keys.DrainReason.POSTGRES_STUCK.value


def _stuck(pod, ready: bool = False):  # type: ignore[no-untyped-def]
    pod["metadata"]["annotations"][keys.ANN_POSTGRES_STUCK] = SINCE
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return pod


def _name(pod) -> str:  # type: ignore[no-untyped-def]
    return str(pod["metadata"]["name"])


def test_a_stuck_standby_is_drained_at_once_although_its_pool_is_not_settled():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _stuck(pods[2])
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[2]): REASON}
    drain = next(a for a in result.actions if a.kind == "Pod" and a.verb == "patch")
    assert SINCE in drain.reason and "recreated on its volume" in drain.reason
    assert keys.ANN_SWITCHOVER not in drain.body["metadata"]["annotations"]  # a standby: no switchover
    assert result.stuck.stuck == [_name(pods[2])]


def test_nothing_happens_without_the_mark_even_when_the_pod_is_not_ready():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {} and not result.stuck.in_progress


def test_a_closed_maintenance_window_does_not_hold_healing_back():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _stuck(pods[1])
    closed = dataclasses.replace(desired(dp), windows=(maintenance.window(["Sat"], "02:00", dt.timedelta(hours=1)),))
    result = plan(closed, observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[1]): REASON}


def test_one_at_a_time_standbys_before_the_primary():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _stuck(pods[0])  # the primary (as labelled)
    _stuck(pods[2])
    first = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(first) == {_name(pods[2]): REASON}

    # While that drain runs, the other stuck pod waits and says why.
    pods[2] = _stuck(live_pod(dp, 2, role=keys.Role.REPLICA, drain="draining", reason=REASON))
    waiting = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(waiting) == {}
    assert any("waits for the drain in progress" in w and _name(pods[2]) in w for w in waiting.waiting), waiting.waiting

    # Once it is gone, the primary goes, with a switchover request.
    pods.pop(2)
    last = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(last) == {_name(pods[0]): REASON}
    body = next(a for a in last.actions if a.kind == "Pod" and a.verb == "patch" and a.name == _name(pods[0])).body
    assert body["metadata"]["annotations"][keys.ANN_SWITCHOVER]


def test_no_second_drain_beside_a_scale_down_asked_for_in_the_same_pass():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    _stuck(pods[1])
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    # The scale-down takes the not-ready (stuck) pod: one drain, for the scale-down.
    assert drains(result) == {_name(pods[1]): keys.DrainReason.SCALE_DOWN.value}


def test_a_requested_drain_is_withdrawn_when_postgres_runs_again():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, drain="requested", reason=REASON)  # the mark is gone
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    cancel = [a for a in result.actions if a.kind == "Pod" and a.verb == "patch" and a.name == _name(pods[2])]
    assert cancel and "its PostgreSQL runs again" in cancel[0].reason
    assert cancel[0].body["metadata"]["annotations"][keys.ANN_DRAIN_STATE] is None


def test_a_drain_under_way_is_not_withdrawn():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, drain="draining", reason=REASON)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert not [a for a in result.actions if a.kind == "Pod" and a.name == _name(pods[2])
                and "cancel" in a.reason]


def _pvc_patches(result, name: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [a.body["metadata"]["annotations"] for a in result.actions
            if a.kind == "PersistentVolumeClaim" and a.verb == "patch" and a.name == name]


def test_the_volume_remembers_the_pod_that_stayed_down_on_it():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _stuck(pods[2])
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    uid = pods[2]["metadata"]["uid"]
    assert _pvc_patches(result, pvcs[2]["metadata"]["name"]) == [{keys.ANN_POSTGRES_STUCK_ON: uid}]
    assert "recreated on its volume" in next(a.reason for a in result.actions if a.kind == "Pod" and a.verb == "patch")


def test_stuck_again_on_the_same_volume_the_volume_goes_with_the_pod():
    """A diverged old primary fails every start on its own data: the second pod on it is drained and
    its volume marked to go; the replacement starts on a new one (restored from the repository)."""
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    _stuck(pods[2])
    pvcs[2] = live_pvc(dp, 2, annotations={keys.ANN_POSTGRES_STUCK_ON: "uid-of-the-pod-before"})
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[2]): REASON}
    assert "on a new volume" in next(a.reason for a in result.actions if a.kind == "Pod" and a.verb == "patch")
    assert _pvc_patches(result, pvcs[2]["metadata"]["name"]) == [{keys.ANN_DELETE_WITH_POD: pods[2]["metadata"]["uid"]}]

    # Once that pod is gone, its volume goes and the replacement gets a new index and a new volume.
    pvcs[2] = live_pvc(dp, 2, annotations={keys.ANN_POSTGRES_STUCK_ON: "uid-of-the-pod-before",
                                           keys.ANN_DELETE_WITH_POD: pods[2]["metadata"]["uid"]})
    gone = plan(desired(dp), observed(pods[:2], pvcs), NOW)
    assert [a.name for a in gone.actions if a.verb == "delete"] == [pvcs[2]["metadata"]["name"]]
    created = [a.name for a in gone.actions if a.verb == "apply" and a.kind in ("Pod", "PersistentVolumeClaim")]
    assert created and all(not name.endswith("-2") for name in created), created


def test_a_ready_pod_on_a_marked_volume_clears_the_mark():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pvcs[1] = live_pvc(dp, 1, annotations={keys.ANN_POSTGRES_STUCK_ON: "uid-of-the-pod-before"})
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert _pvc_patches(result, pvcs[1]["metadata"]["name"]) == [{keys.ANN_POSTGRES_STUCK_ON: None}]
