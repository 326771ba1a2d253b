"""The agent against a real API server, a real topology etcd and multipooler test peers."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState

from multigres_pools.agent.context import AgentConfig, SimulatedCrash
from multigres_pools.playground.cluster import free_port

RFD = DrainState.READY_FOR_DELETION.value


def test_full_drain(rig_factory) -> None:
    rig = rig_factory()
    _p0, p1, p2 = rig.names
    agent = rig.agent()
    rig.run(agent)
    assert [rig.role(n) for n in rig.names] == ["PRIMARY", "REPLICA", "REPLICA"]
    rig.request_drain(p2)
    rig.run(agent, p2)
    assert rig.state(p2) == RFD
    assert not rig.in_sync_list(p2) and rig.in_sync_list(p1)
    assert not rig.record_exists(p2) and rig.record_exists(p1)
    assert rig.role(p2) is None  # the record is gone, so is the label
    # Out of its headless Service's DNS in the same write; the others stay in it.
    assert rig.label(p2, keys.LABEL_DNS) is None and rig.label(p1, keys.LABEL_DNS) == keys.DNS_PUBLISHED
    sent = rig.primary_peer.calls("UpdateSynchronousStandbyList")
    assert len(sent) == 1 and sent[0].reload_config and sent[0].standby_ids[0].name == rig.peers[p2].service_id
    assert rig.events("DrainCompleted")
    # Per-shard labels; the rig's pods have no MultigresShard owner, hence shard "".
    shard = {"namespace": rig.namespace, "shard": ""}
    assert agent.ctx.metrics.registry.get_sample_value("multigres_pools_agent_drains_completed_total", shard) == 1


def _engine_deletes_ready_pods(rig) -> list[str]:
    """The engine's part: delete pods whose drain reached ready-for-deletion (and only those)."""
    deleted = []
    for name in rig.names:
        pod = rig.pod(name)
        if pod and (pod["metadata"].get("annotations") or {}).get(keys.ANN_DRAIN_STATE) == RFD:
            rig.core.delete_namespaced_pod(name, rig.namespace)
            deleted.append(name)
    return deleted


def test_crash_between_every_pair_of_side_effects(rig_factory) -> None:
    effects: list[str] = []
    clean = rig_factory(before_effect=effects.append)
    clean.request_drain(clean.names[2])
    clean.run(clean.agent(), clean.names[2])
    assert clean.state(clean.names[2]) == RFD
    drain_effects = effects[: effects.index(f"write:{RFD}") + 1]
    assert drain_effects == ["write:draining", "remove-standby", "write:acknowledged", "unregister", f"write:{RFD}"]

    for crash_at in range(len(effects)):
        seen: list[str] = []

        def crash(name: str, seen=seen, crash_at=crash_at) -> None:
            if len(seen) == crash_at:
                raise SimulatedCrash(name)
            seen.append(name)

        rig = rig_factory(before_effect=crash)
        victim = rig.names[2]
        rig.request_drain(victim)
        with pytest.raises(SimulatedCrash):
            rig.run(rig.agent(), victim)
        # Whatever the crash left behind, ready-for-deletion implies the standby is out and unregistered.
        if rig.state(victim) == RFD:
            assert not rig.in_sync_list(victim) and not rig.record_exists(victim)
        assert _engine_deletes_ready_pods(rig) in ([], [victim])
        if rig.pod(victim) is not None:
            assert rig.state(victim) != RFD or not rig.in_sync_list(victim)
        rig.before_effect = None
        rig.run(rig.agent(), rig.names[0])  # a fresh agent resumes from the annotations alone
        assert rig.state(victim) in (RFD, None)
        assert not rig.in_sync_list(victim) and not rig.record_exists(victim)
        assert rig.in_sync_list(rig.names[1]) and rig.record_exists(rig.names[1])


def test_etcd_down_blocks_without_touching_anything(rig_factory) -> None:
    rig = rig_factory(topo_address=f"127.0.0.1:{free_port()}")
    victim = rig.names[2]
    rig.request_drain(victim)
    rig.run(rig.agent(), victim)
    assert rig.state(victim) == DrainState.REQUESTED
    assert rig.annotation(victim, keys.ANN_DRAIN_BLOCKED) == "topology-unavailable"
    assert rig.in_sync_list(victim) and rig.record_exists(victim)
    assert rig.primary_peer.calls("UpdateSynchronousStandbyList") == []


def test_primary_not_ready_waits_then_completes(rig_factory, kubelet) -> None:
    rig = rig_factory()
    victim = rig.names[2]
    kubelet.mark_not_ready(rig.namespace, rig.names[0])
    rig.request_drain(victim)
    agent = rig.agent()
    rig.run(agent, victim)
    assert rig.state(victim) == DrainState.REQUESTED
    assert rig.annotation(victim, keys.ANN_DRAIN_BLOCKED) == "primary-pod-not-ready"
    assert rig.primary_peer.calls("UpdateSynchronousStandbyList") == []
    kubelet.mark_ready(rig.namespace, rig.names[0])
    rig.run(agent, victim)
    assert rig.state(victim) == RFD and rig.annotation(victim, keys.ANN_DRAIN_BLOCKED) is None


def test_grpc_unavailable_holds_draining(rig_factory) -> None:
    rig = rig_factory()
    victim = rig.names[2]
    rig.primary_peer.inject_unavailable(True)
    rig.request_drain(victim)
    agent = rig.agent()
    rig.run(agent, victim)
    assert rig.state(victim) == DrainState.DRAINING
    assert rig.annotation(victim, keys.ANN_DRAIN_BLOCKED) == "primary-unreachable"
    assert rig.record_exists(victim)
    rig.primary_peer.inject_unavailable(False)
    rig.run(agent, victim)
    assert rig.state(victim) == RFD and not rig.in_sync_list(victim)


def test_last_standby_refusal_stalls_and_force_is_explicit(rig_factory) -> None:
    rig = rig_factory(replicas=2, config=AgentConfig(register_topology=False, stall_after_s=0))
    victim = rig.names[1]
    rig.request_drain(victim)
    agent = rig.agent()
    rig.run(agent, victim)
    assert rig.state(victim) == DrainState.DRAINING
    assert rig.annotation(victim, keys.ANN_DRAIN_BLOCKED) == "last-sync-standby"
    assert rig.in_sync_list(victim) and rig.record_exists(victim)
    assert rig.events("DrainBlocked") and rig.events("DrainStalled")
    conds = {c["type"]: c for c in rig.pod(victim)["status"]["conditions"]}
    assert conds["DrainStalled"]["status"] == "True" and conds["DrainStalled"]["reason"] == "last-sync-standby"
    shard = {"namespace": rig.namespace, "shard": ""}
    assert agent.ctx.metrics.registry.get_sample_value("multigres_pools_agent_drains_stalled", shard) == 1
    rig.run(agent, victim)  # nothing forced silently: still blocked on the next pass
    assert rig.state(victim) == DrainState.DRAINING
    rig.core.patch_namespaced_pod(victim, rig.namespace,
                                  {"metadata": {"annotations": {keys.ANN_DRAIN_FORCE: DrainState.DRAINING.value}}})
    rig.run(agent, victim)
    assert rig.state(victim) == RFD and rig.annotation(victim, keys.ANN_DRAIN_FORCE) is None
    assert rig.events("DrainForced") and not rig.record_exists(victim)


def test_external_deletion_unregisters_before_the_finalizer_goes(rig_factory) -> None:
    rig = rig_factory()
    victim = rig.names[2]
    rig.core.delete_namespaced_pod(victim, rig.namespace)
    assert rig.pod(victim)["metadata"]["deletionTimestamp"]  # held by our finalizer
    effects: list[str] = []
    rig.run(rig.agent(before_effect=effects.append), rig.names[0])
    assert rig.pod(victim) is None
    # Out of DNS before anything else, while its multipooler is being stopped.
    assert effects[0] == "write:unpublished" and "remove-finalizer" in effects
    assert not rig.in_sync_list(victim) and not rig.record_exists(victim)


def test_external_deletion_with_etcd_down_keeps_the_finalizer(rig_factory) -> None:
    rig = rig_factory(topo_address=f"127.0.0.1:{free_port()}")
    victim = rig.names[2]
    rig.core.delete_namespaced_pod(victim, rig.namespace)
    rig.run(rig.agent(), rig.names[0])
    assert rig.pod(victim) is not None and rig.events("UnregistrationFailed")


def test_roles_follow_a_failover(rig_factory) -> None:
    rig = rig_factory()
    p0, p1, p2 = rig.names
    agent = rig.agent()
    rig.run(agent)
    assert (rig.role(p0), rig.role(p1)) == ("PRIMARY", "REPLICA")
    rig.peers[p0].set_role("REPLICA")
    rig.peers[p1].set_role("PRIMARY")
    rig.peers[p2].set_role("DRAINED")
    for peer in rig.peers.values():
        peer.register(rig.etcd_endpoint, rig.root)
    rig.run(agent)
    assert [rig.role(n) for n in rig.names] == ["REPLICA", "PRIMARY", "DRAINED"]
    rig.etcd.delete(rig.peers[p2].key(rig.root))
    rig.run(agent)
    assert rig.role(p2) is None


def test_pruning_removes_records_without_pods(rig_factory) -> None:
    from multigres_pools.playground.era_a_double import MultipoolerPeer

    rig = rig_factory()
    # Records of the shard's namespace (agent/trust.py: records of another namespace are never pruned).
    ghost = MultipoolerPeer(cell="zone1", service_id="p-ghost000", hostname=f"gone-pod.hl.{rig.namespace}.svc")
    ghost_primary = MultipoolerPeer(cell="zone1", service_id="p-ghost001", hostname=f"gone-2.hl.{rig.namespace}.svc",
                                    role="PRIMARY")
    for g in (ghost, ghost_primary):
        g.register(rig.etcd_endpoint, rig.root)
    off = rig.agent(config=AgentConfig(register_topology=False, prune=False))
    rig.run(off)
    assert rig.etcd.get(ghost.key(rig.root)) is not None
    rig.run(rig.agent())
    assert rig.etcd.get(ghost.key(rig.root)) is None
    assert rig.etcd.get(ghost_primary.key(rig.root)) is not None  # a PRIMARY record is never pruned
    assert all(rig.record_exists(n) for n in rig.names)
    assert rig.events("PoolersPruned")


def test_primary_drain_needs_a_connected_sync_standby(rig_factory) -> None:
    rig = rig_factory()
    primary = rig.names[0]
    rig.primary_peer.set_connected([])
    rig.request_drain(primary, keys.DrainReason.ROLLING_UPDATE)
    agent = rig.agent()
    rig.run(agent, primary)
    assert rig.state(primary) == DrainState.REQUESTED
    assert rig.annotation(primary, keys.ANN_DRAIN_BLOCKED) == "no-connected-sync-standby-for-failover"
    assert rig.events("PrimaryDrain")
    rig.primary_peer.set_connected([("zone1", rig.peers[rig.names[1]].service_id)])
    rig.run(agent, primary)
    assert rig.state(primary) == RFD and not rig.record_exists(primary)
    assert rig.primary_peer.calls("UpdateSynchronousStandbyList") == []
