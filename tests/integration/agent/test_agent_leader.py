"""One acting agent: a second instance only takes part in the election while the first holds the
Lease, takes over when it is released, and an agent whose Lease was taken stops acting and steps down.

Every side effect an agent attempts passes its `before_effect` hook first (even one that its fence
then refuses), so an empty list proves the standby did not even try."""

from __future__ import annotations

import threading

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState
from kubernetes import client

from multigres_pools.agent.__main__ import Runtime, build
from multigres_pools.agent.context import NotLeader
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.playground.cluster import free_port
from multigres_pools.playground.localstack import http_get, wait_for

pytestmark = pytest.mark.cluster
TIMING = ["--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1"]


def agent(kube, namespace: str, identity: str, effects: list[str]) -> tuple[Runtime, threading.Thread, int]:  # type: ignore[no-untyped-def]
    port = free_port()
    runtime = build(["--kubeconfig", str(kube.kubeconfig), "--namespace", namespace, "--http", f"127.0.0.1:{port}",
                     "--lease-namespace", namespace, "--identity", identity, "--poll-interval", "0.5", *TIMING],
                    dataplane=EraA(dial_host=lambda host: "127.0.0.1", rpc_timeout=2), before_effect=effects.append)
    thread = threading.Thread(target=runtime.run, name=identity, daemon=True)
    thread.start()
    return runtime, thread, port


def stop(runtime: Runtime, thread: threading.Thread) -> None:
    runtime.stop_flag.set()
    thread.join(30)
    assert not thread.is_alive()


def holder(kube, namespace: str) -> str | None:  # type: ignore[no-untyped-def]
    lease = client.CoordinationV1Api(kube.api_client()).read_namespaced_lease("multigres-pools-agent", namespace)
    return lease.spec.holder_identity


def test_a_standby_agent_does_nothing_until_it_takes_over(kube, namespace, rig_factory) -> None:  # type: ignore[no-untyped-def]
    rig = rig_factory()
    effects_a: list[str] = []
    effects_b: list[str] = []
    a, thread_a, port_a = agent(kube, namespace, "agent-a", effects_a)
    try:
        wait_for(lambda: rig.role(rig.names[0]) == "PRIMARY", 60, "agent-a publishing roles")
        b, thread_b, port_b = agent(kube, namespace, "agent-b", effects_b)
        try:
            wait_for(lambda: http_get(f"http://127.0.0.1:{port_b}/readyz") == (200, "standby\n"), 60, "agent-b standby")
            victim = rig.names[2]
            rig.request_drain(victim)
            wait_for(lambda: rig.state(victim) == DrainState.READY_FOR_DELETION, 60, "agent-a draining")
            assert holder(kube, namespace) == "agent-a"
            assert effects_b == [] and b.agent.passes == 0, effects_b  # not one attempt, not one pass
            assert http_get(f"http://127.0.0.1:{port_a}/readyz")[0] == 200
            assert "multigres_pools_agent_leader 0.0" in http_get(f"http://127.0.0.1:{port_b}/metrics")[1]

            stop(a, thread_a)  # a clean stop releases the Lease: agent-b takes over at once
            assert a.lost is None
            wait_for(lambda: holder(kube, namespace) == "agent-b", 30, "agent-b taking over")
            # The new leader acts: a role label that went missing is published again, by agent-b.
            rig.core.patch_namespaced_pod(rig.names[0], namespace,
                                          {"metadata": {"labels": {keys.LABEL_ROLE: None}}})
            wait_for(lambda: rig.role(rig.names[0]) == "PRIMARY", 60, "agent-b publishing the role")
            assert "write:role" in effects_b
            metrics = http_get(f"http://127.0.0.1:{port_b}/metrics")[1]
            assert 'multigres_pools_agent_leadership_changes_total{change="acquired"} 1.0' in metrics
        finally:
            stop(b, thread_b)
    finally:
        if thread_a.is_alive():
            stop(a, thread_a)


def test_an_agent_whose_lease_was_taken_stops_acting(kube, namespace, rig_factory, caplog) -> None:  # type: ignore[no-untyped-def]
    rig = rig_factory()
    effects: list[str] = []
    a, thread, _ = agent(kube, namespace, "agent-a", effects)
    try:
        wait_for(lambda: rig.role(rig.names[0]) == "PRIMARY", 60, "agent-a publishing roles")
        # Another candidate writes itself as holder (what a takeover looks like from here).
        coordination = client.CoordinationV1Api(kube.api_client())
        lease = coordination.read_namespaced_lease("multigres-pools-agent", namespace)
        lease.spec.holder_identity = "intruder"
        coordination.replace_namespaced_lease("multigres-pools-agent", namespace, lease)
        thread.join(60)  # the renew deadline passes without a renewal: the agent steps down
        assert not thread.is_alive()
        assert a.lost and "renew deadline" in a.lost
        assert sum("lost leadership" in r.getMessage() for r in caplog.records) == 1
        before = len(effects)
        with pytest.raises(NotLeader):
            a.agent.ctx.effect("write:role")
        with pytest.raises(NotLeader):
            a.agent.ctx.kube.event(rig.pod(rig.names[0]), "Test", "must not be written")
        rig.request_drain(rig.names[2])
        a.agent.on_pod(rig.pod(rig.names[2]))  # an event arriving late: no pass runs
        assert rig.state(rig.names[2]) == DrainState.REQUESTED
        assert len(effects) == before + 1  # only the refused effect() call above
        assert holder(kube, namespace) == "intruder"  # never released what it no longer held
    finally:
        if thread.is_alive():
            stop(a, thread)
