"""The stall conditions of a MultigresShard (status/stalls.py) as status.compute reports them."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, request_problems
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status
from ansible_collections.multigres.pools.plugins.module_utils.status import stalls

from .plan_factories import NOW, desired, desired_pool, healthy, live_pod, observed, plan, shard_cr

LATER = NOW + dt.timedelta(minutes=10)


def _status(pods, pvcs, cr, now, stall_after=300.0):  # type: ignore[no-untyped-def]
    dp = desired_pool()
    obs = observed(pods, pvcs, cr=cr)
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, now), stamp=facts.format_time(now),
                        agent_stall_after_s=stall_after)
    return {c["type"]: c for c in st["conditions"]}, st


def test_a_terminating_pod_the_agent_does_not_release_stalls_the_agent_after_the_threshold():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, terminating=True)  # since 11:58, with the finalizer
    cond, st = _status(pods, pvcs, shard_cr(), NOW)
    assert cond["AgentStalled"]["status"] == "False" and st["readyReplicas"] == 2
    assert stalls.recheck_after(pods, NOW, 300) == pytest.approx(181.0)  # 11:58 + 300 s, plus a second
    cond, st = _status(pods, pvcs, shard_cr(), LATER)
    stalled = cond["AgentStalled"]
    assert stalled["status"] == "True" and stalled["reason"] == "PodsWaitingForAgent"
    name = facts.name(pods[2])
    expected = f"pod {name}: Terminating with finalizer {keys.FINALIZER_POD} since 2026-05-01T11:58:00Z"
    assert expected in stalled["message"]
    assert keys.AGENT_LEASE_NAME in stalled["message"] and "not counted as replicas" in stalled["message"]
    assert stalls.recheck_after(pods, LATER, 300) == 0
    cr = shard_cr()
    reasons = [a.event_reason for a in status.transition_events(cr, {}, st)]
    assert "AgentStalled" in reasons
    # Same situation an hour later: the same status (no age in the message), nothing to write.
    _, again = _status(pods, pvcs, shard_cr(status=st), LATER + dt.timedelta(hours=1))
    assert not status.changed(st, again)
    # The agent released it: the condition clears with a Normal event.
    cleared_cond, cleared = _status(pods[:2], pvcs, shard_cr(status=st), LATER)
    assert cleared_cond["AgentStalled"]["status"] == "False"
    assert "AgentProgressing" in [a.event_reason for a in status.transition_events(cr, st, cleared)]


def test_a_drain_never_taken_up_stalls_the_agent_but_one_the_agent_answered_does_not():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, role=keys.Role.REPLICA, drain=keys.DrainState.REQUESTED)  # requested 11:59
    cond, _ = _status(pods, pvcs, shard_cr(), LATER)
    stalled = cond["AgentStalled"]
    assert stalled["status"] == "True" and "drain requested, not taken up" in stalled["message"]
    pods[1]["metadata"]["annotations"][keys.ANN_DRAIN_STATE_SINCE] = "2026-05-01T11:59:30Z"  # the agent wrote it
    cond, _ = _status(pods, pvcs, shard_cr(), LATER)
    assert cond["AgentStalled"]["status"] == "False"


def test_a_pod_drain_stalled_condition_is_surfaced_on_the_shard():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    message = "p-1: drain cannot leave draining: last-sync-standby; stalled for 300s. Fix the cause, or force"
    pods[1]["status"]["conditions"].append({"type": "DrainStalled", "status": "True", "reason": "last-sync-standby",
                                            "message": message})
    cond, _ = _status(pods, pvcs, shard_cr(), NOW)
    assert cond["DrainStalled"] == {"type": "DrainStalled", "status": "True", "reason": "last-sync-standby",
                                    "message": message, "observedGeneration": 3,
                                    "lastTransitionTime": facts.format_time(NOW)}
    pods[1]["status"]["conditions"][-1]["status"] = "False"
    cond, _ = _status(pods, pvcs, shard_cr(), NOW)
    assert cond["DrainStalled"]["status"] == "False" and cond["DrainStalled"]["reason"] == "DrainsProgressing"


def test_topology_unreachable_follows_the_agent_verdict():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    cond, _ = _status(pods, pvcs, shard_cr(), NOW)
    topo = cond["TopologyUnreachable"]
    assert (topo["status"], topo["reason"]) == ("False", "NoErrorReported")
    down = json.dumps({"reachable": False, "reason": "TopologyUnavailable", "since": "2026-05-01T11:00:00Z",
                       "message": "the agent cannot read the topology etcd at e:2379 since 2026-05-01T11:00:00Z"})
    cond, _ = _status(pods, pvcs, shard_cr(annotations={keys.ANN_TOPOLOGY_HEALTH: down}), NOW)
    topo = cond["TopologyUnreachable"]
    assert topo["status"] == "True" and topo["reason"] == "TopologyUnavailable" and "e:2379" in topo["message"]
    up = json.dumps({"reachable": True, "message": "the agent reads the topology etcd at e:2379 again"})
    cond, _ = _status(pods, pvcs, shard_cr(annotations={keys.ANN_TOPOLOGY_HEALTH: up}), NOW)
    assert cond["TopologyUnreachable"]["status"] == "False" and cond["TopologyUnreachable"]["reason"] == "Reachable"
    cond, _ = _status(pods, pvcs, shard_cr(annotations={keys.ANN_TOPOLOGY_HEALTH: "{not json"}), NOW)
    assert cond["TopologyUnreachable"]["status"] == "Unknown"


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "inf", "nan"])
def test_a_bad_threshold_is_a_clear_error(raw, monkeypatch):
    monkeypatch.setenv(keys.ENV_AGENT_STALL_AFTER, raw)
    problems = request_problems(Request(namespace="db", name="demo"))
    assert problems and keys.ENV_AGENT_STALL_AFTER in problems[0]
    assert request_problems(Request(namespace="db", name="demo", agent_stall_after=5.0)) == []
    assert "agent_stall_after" in request_problems(Request(namespace="db", name="demo", agent_stall_after=0))[0]
