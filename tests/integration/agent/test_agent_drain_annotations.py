"""Drain-annotation hygiene in the agent against a real API server and etcd (docs/operations.md,
"Drain annotations"): force is one-shot and recorded, stale forces are removed, unknown states are
reported once and left alone while other pods drain."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState

from multigres_pools.agent.context import AgentConfig

RFD = DrainState.READY_FOR_DELETION.value


def _annotate(rig, name: str, **ann: str | None) -> None:  # type: ignore[no-untyped-def]
    rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"annotations": ann}})


def test_force_is_consumed_and_recorded(rig_factory) -> None:  # type: ignore[no-untyped-def]
    rig = rig_factory(replicas=2, config=AgentConfig(register_topology=False, stall_after_s=0))
    victim = rig.names[1]
    rig.request_drain(victim)
    agent = rig.agent()
    rig.run(agent, victim)
    assert rig.state(victim) == DrainState.DRAINING  # the last synchronous standby: refused
    _annotate(rig, victim, **{keys.ANN_DRAIN_FORCE: DrainState.DRAINING.value})
    rig.run(agent, victim)
    assert rig.state(victim) == RFD and rig.annotation(victim, keys.ANN_DRAIN_FORCE) is None
    record = rig.annotation(victim, keys.ANN_DRAIN_FORCED)
    assert record is not None and record.startswith("draining@") and record.endswith("Z")
    (event,) = rig.events("DrainForced")
    assert event.type == "Warning" and victim in event.message


def test_stale_force_is_removed_and_never_used(rig_factory) -> None:  # type: ignore[no-untyped-def]
    rig = rig_factory()
    _p0, p1, p2 = rig.names
    agent = rig.agent()
    # On a pod without a drain: removed, so a later drain cannot pick it up.
    _annotate(rig, p2, **{keys.ANN_DRAIN_FORCE: DrainState.DRAINING.value})
    rig.run(agent, p2)
    assert rig.annotation(p2, keys.ANN_DRAIN_FORCE) is None and rig.state(p2) is None
    # Naming a state the drain already left: removed, and the drain still proves every step.
    rig.request_drain(p1)
    _annotate(rig, p1, **{keys.ANN_DRAIN_STATE: DrainState.DRAINING.value,
                          keys.ANN_DRAIN_FORCE: DrainState.REQUESTED.value})
    rig.run(agent, p1)
    assert rig.annotation(p1, keys.ANN_DRAIN_FORCE) is None and rig.annotation(p1, keys.ANN_DRAIN_FORCED) is None
    assert rig.state(p1) == RFD and not rig.in_sync_list(p1)  # the REMOVE was sent, not skipped
    assert not rig.events("DrainForced")
    discarded = rig.events("DrainForceDiscarded")
    assert sorted(e.involved_object.name for e in discarded) == sorted([p1, p2])
    assert all(e.type == "Warning" for e in discarded)


def test_unknown_state_is_reported_once_and_left_alone(rig_factory) -> None:  # type: ignore[no-untyped-def]
    rig = rig_factory()
    p0, p1, p2 = rig.names
    agent = rig.agent()
    _annotate(rig, p2, **{keys.ANN_DRAIN_STATE: "drainig"})
    rig.request_drain(p1)
    rig.run(agent, p0)
    rig.run(agent, p0)
    assert rig.state(p1) == RFD and not rig.in_sync_list(p1)  # the other pod's drain went on
    assert rig.state(p2) == "drainig" and rig.in_sync_list(p2) and rig.record_exists(p2)
    assert rig.annotation(p2, keys.ANN_DRAIN_BLOCKED) is None
    (event,) = rig.events("UnknownDrainState")
    assert event.type == "Warning" and p2 in event.message and keys.ANN_DRAIN_STATE in event.message
    assert "requested, draining, acknowledged, ready-for-deletion" in event.message
