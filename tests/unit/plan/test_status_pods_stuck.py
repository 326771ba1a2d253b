"""The shard condition PodsStuck (status/pod_stuck.py): containers of pool pods that wait for something that
will not come by itself, named on the MultigresShard; the phase, the events, the recheck."""

from __future__ import annotations

import datetime as dt

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import conditions, keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.status import pod_stuck
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, observed, plan, shard_cr

PULL = 'Back-off pulling image "ghcr.io/multigres/pgctld:v0.1.0"'


def _wait(pod: dict, field: str, name: str, reason: str, message: str = "") -> dict:
    state = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
    pod["status"].setdefault(field, []).append({"name": name, "ready": False, "restartCount": 0, "state": state})
    return pod


def _status(pods, now=NOW, cr=None):  # type: ignore[no-untyped-def]
    dp = desired_pool()
    obs = observed(pods, [], cr=cr if cr is not None else shard_cr())
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, now), stamp=facts.format_time(now))
    return {c["type"]: c for c in st["conditions"]}, st


@pytest.mark.parametrize("reason", sorted(pod_stuck.STUCK_REASONS))
def test_each_stuck_reason_names_pod_container_reason_and_message_and_degrades(reason: str) -> None:
    pods, _ = healthy(desired_pool())
    _wait(pods[1], "containerStatuses", "multipooler", reason, "the kubelet's words")
    cond, st = _status(pods)
    stuck = cond[keys.ShardCondition.PODS_STUCK]
    assert stuck["status"] == "True" and stuck["reason"] == reason
    assert stuck["message"] == f"{facts.name(pods[1])}: container multipooler waiting: {reason} (the kubelet's words)"
    assert st["phase"] == "Degraded"


def test_a_healthy_shard_has_no_stuck_pods_and_other_waiting_reasons_do_not_count() -> None:
    pods, _ = healthy(desired_pool())
    cond, st = _status(pods)
    assert cond["PodsStuck"] == {"type": "PodsStuck", "status": "False", "reason": "NoPodStuck", "message": "",
                                 "observedGeneration": 3, "lastTransitionTime": facts.format_time(NOW)}
    assert st["phase"] == "Healthy"
    _wait(pods[0], "containerStatuses", "multipooler", "SomethingElse")
    assert _status(pods)[0]["PodsStuck"]["status"] == "False"


def test_the_pgctld_sidecar_init_container_and_an_ephemeral_container_are_looked_at() -> None:
    pods, _ = healthy(desired_pool())
    _wait(pods[0], "initContainerStatuses", "postgres", "ImagePullBackOff", PULL)
    _wait(pods[0], "ephemeralContainerStatuses", "debugger", "ErrImagePull", "nope")
    message = _status(pods)[0]["PodsStuck"]["message"]
    name = facts.name(pods[0])
    assert message == (f"{name}: init container postgres waiting: ImagePullBackOff ({PULL}); "
                       f"{name}: ephemeral container debugger waiting: ErrImagePull (nope)")


def test_container_creating_and_pod_initializing_count_only_past_the_threshold() -> None:
    pods, _ = healthy(desired_pool())
    pods[2]["metadata"]["creationTimestamp"] = "2026-05-01T11:50:00Z"
    pods[2]["status"]["conditions"].append(
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-05-01T11:57:00Z"})
    _wait(pods[2], "initContainerStatuses", "postgres", "ContainerCreating")
    _wait(pods[2], "containerStatuses", "multipooler", "PodInitializing")
    # Scheduled three minutes ago (the creation time is older: the scheduler's time counts).
    cond, st = _status(pods)
    assert cond["PodsStuck"]["status"] == "False" and st["phase"] != "Degraded"
    assert pod_stuck.recheck_after(pods, NOW) == pytest.approx(121.0)  # 11:57 + 300 s, plus a second
    later = NOW + dt.timedelta(minutes=2, seconds=1)
    cond, st = _status(pods, later)
    name = facts.name(pods[2])
    assert cond["PodsStuck"]["message"] == (
        f"{name}: init container postgres waiting: ContainerCreating since 2026-05-01T11:57:00Z; "
        f"{name}: container multipooler waiting: PodInitializing since 2026-05-01T11:57:00Z")
    assert cond["PodsStuck"]["reason"] == "ContainerCreating" and st["phase"] == "Degraded"
    assert pod_stuck.recheck_after(pods, later) == 0
    # Without a PodScheduled time the creation time counts; without either, no verdict.
    del pods[2]["status"]["conditions"][-1]
    assert "since 2026-05-01T11:50:00Z" in _status(pods)[0]["PodsStuck"]["message"]
    assert pod_stuck.recheck_after(pods, NOW) == 0  # already past
    del pods[2]["metadata"]["creationTimestamp"]
    assert _status(pods, later)[0]["PodsStuck"]["status"] == "False"


def test_pods_are_listed_by_name_and_terminating_ones_are_left_out() -> None:
    pods, _ = healthy(desired_pool())
    for pod in reversed(pods):
        _wait(pod, "containerStatuses", "multipooler", "CrashLoopBackOff", "back-off 40s")
    pods[1]["metadata"]["deletionTimestamp"] = "2026-05-01T11:59:00Z"
    message = _status(list(reversed(pods)))[0]["PodsStuck"]["message"]
    names = [facts.name(p) for p in pods]
    assert message == "; ".join(f"{n}: container multipooler waiting: CrashLoopBackOff (back-off 40s)"
                                for n in (names[0], names[2]))


def test_the_message_stays_within_the_crd_limit_and_counts_what_it_leaves_out() -> None:
    dp = desired_pool(replicas=60)
    pods, _ = healthy(dp)
    for pod in pods:
        _wait(pod, "containerStatuses", "multipooler", "CreateContainerConfigError", "x" * 5000)
    message = pod_stuck.condition(pods, NOW)["message"]
    assert len(message) <= conditions.MESSAGE_MAX
    kept = message.split("; and ")
    assert len(kept) == 2 and kept[1].endswith(" more")
    named = len(pod_stuck.subjects(message))
    assert named + int(kept[1].split()[0]) == 60
    # Each container's own message is cut, so one verbose error cannot crowd out the others.
    assert ("x" * pod_stuck.WAITING_MESSAGE_MAX + "…)") in message and ("x" * 1025) not in message


def test_a_warning_when_pods_get_stuck_not_when_only_their_reason_alternates_and_a_normal_event_when_cleared():
    pods, _ = healthy(desired_pool())
    _wait(pods[0], "initContainerStatuses", "postgres", "ErrImagePull", "not found")
    cr = shard_cr()
    _, first = _status(pods)
    warned = status.transition_events(cr, {}, first)
    (warning,) = [a for a in warned if a.event_reason == "PodsStuck"]
    assert warning.event_type == "Warning" and facts.name(pods[0]) in warning.reason

    pods[0]["status"]["initContainerStatuses"][0]["state"]["waiting"] = {"reason": "ImagePullBackOff", "message": PULL}
    _, second = _status(pods, cr=shard_cr(status=first))
    assert second["conditions"] != first["conditions"]  # the status says the new reason...
    assert "PodsStuck" not in [a.event_reason for a in status.transition_events(cr, first, second)]  # ...quietly

    _wait(pods[1], "containerStatuses", "multipooler", "CrashLoopBackOff")
    _, third = _status(pods, cr=shard_cr(status=second))
    assert "PodsStuck" in [a.event_reason for a in status.transition_events(cr, second, third)]  # a new pod

    pods, _ = healthy(desired_pool())
    _, cleared = _status(pods, cr=shard_cr(status=third))
    events = [(a.event_type, a.event_reason) for a in status.transition_events(cr, third, cleared)]
    assert ("Normal", "PodsUnstuck") in events
    assert cleared["phase"] == "Healthy"


def test_subjects_read_what_the_message_names() -> None:
    message = ("p-0: init container postgres waiting: ErrImagePull (a; b); "
               "p-1: container multipooler waiting: CrashLoopBackOff; and 3 more")
    assert pod_stuck.subjects(message) == {"p-0: init container postgres", "p-1: container multipooler"}
    assert pod_stuck.subjects("") == frozenset()
