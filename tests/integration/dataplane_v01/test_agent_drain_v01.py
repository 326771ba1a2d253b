"""The agent's drain against real Multigres v0.1.0 (live multiorch) and a real API server.

Pool pods are stand-ins named after the provisioner's service ids (the agent ties a record to a pod by
id or hostname, and every provisioner record says `localhost`); their multipooler arguments point at
the provisioner's etcd. The drain must end with the standby INELIGIBLE, out of the primary's cohort
and synchronous standby list, its record gone, and must not be fooled by a standby that comes back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from kubernetes import client

from multigres_pools.agent.context import AgentConfig, Context, SimulatedCrash
from multigres_pools.agent.core import Agent
from multigres_pools.agent.kube import Kube, now_rfc3339
from multigres_pools.dataplane.base import Eligibility, Pooler
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.provisioned import CELLS, ProvisionedShard
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from tests.helpers.polling import eventually

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]

RFD = keys.DrainState.READY_FOR_DELETION.value


def pool_pod(shard: ProvisionedShard, cell: str, namespace: str, sid: naming.ShardId) -> dict[str, Any]:
    topo = shard.topology()
    args = ["multipooler", f"--topo-global-server-addresses={topo.global_addresses[0].removeprefix('http://')}",
            f"--topo-global-root={topo.global_root}", f"--cell={cell}", f"--database={topo.database}",
            f"--table-group={topo.tablegroup}", f"--shard={topo.shard}", f"--service-id={shard.service_id(cell)}"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": shard.service_id(cell), "namespace": namespace,
                         "labels": labels.pool_labels(sid, "default", cell), "finalizers": [keys.FINALIZER_POD]},
            "spec": {"initContainers": [{"name": "multipooler", "image": "multigres", "args": args,
                                         "restartPolicy": "Always"}],
                     "containers": [{"name": "postgres", "image": "pgctld"}]}}


class Stand:
    """The shard's pods in the API server, and an agent wired to them and to the real pooler."""

    def __init__(self, api: client.ApiClient, agent_client: KubeClient, namespace: str, shard: ProvisionedShard,
                 dp: V0_1) -> None:
        self.api, self.agent_client, self.namespace, self.shard, self.dp = api, agent_client, namespace, shard, dp
        self.core = client.CoreV1Api(api)
        self.sid = naming.ShardId("v01", "postgres", "default", "0-inf")
        for cell in CELLS:
            self.core.create_namespaced_pod(namespace, pool_pod(shard, cell, namespace, self.sid))

    def agent(self, dataplane: Any = None, config: AgentConfig | None = None, **ctx: Any) -> Agent:
        return Agent(Context(kube=Kube(self.agent_client), dataplane=dataplane or self.dp,
                             config=config or AgentConfig(register_topology=False), **ctx))

    def pod(self, name: str) -> dict[str, Any] | None:
        return Kube(self.agent_client).get_pod(self.namespace, name)

    def ann(self, name: str, key: str) -> str | None:
        pod = self.pod(name)
        return None if pod is None else (pod["metadata"].get("annotations") or {}).get(key)

    def request_drain(self, name: str) -> None:
        self.core.patch_namespaced_pod(name, self.namespace, {"metadata": {"annotations": {
            keys.ANN_DRAIN_STATE: keys.DrainState.REQUESTED.value, keys.ANN_DRAIN_REQUESTED_AT: now_rfc3339(),
            keys.ANN_DRAIN_REASON: keys.DrainReason.SCALE_DOWN.value}}})

    def run(self, agent: Agent, name: str) -> None:
        agent.on_pod(self.pod(name))

    def events(self, reason: str) -> list[Any]:
        return [e for e in self.core.list_namespaced_event(self.namespace).items if e.reason == reason]

    def listed(self, primary: Pooler, pooler: Pooler) -> bool:
        return self.dp.sync_replication(primary).lists(pooler.id)

    def record(self, pooler: Pooler) -> bytes | None:
        found = Etcd(self.shard.etcd_endpoint).get(pooler.key)
        return found[0] if found else None


@pytest.fixture
def stand(kube, namespace, kubelet, shard: ProvisionedShard, dp: V0_1, healthy: Pooler) -> Iterator[Stand]:
    s = Stand(kube.api_client(), kube.client(), namespace, shard, dp)
    kubelet.mark_all_ready(namespace)
    yield s


def test_replica_drain_ends_ineligible_out_and_unregistered(stand: Stand, healthy: Pooler) -> None:
    primary = healthy
    victim = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != primary.id)
    agent = stand.agent()
    stand.run(agent, primary.id.name)
    assert stand.pod(primary.id.name)["metadata"]["labels"][keys.LABEL_ROLE] == "PRIMARY"
    stand.request_drain(victim.id.name)
    eventually(lambda: (stand.run(agent, victim.id.name), stand.ann(victim.id.name, keys.ANN_DRAIN_STATE))[1] == RFD,
               timeout=60, what="the drain reaching ready-for-deletion")
    assert not stand.listed(primary, victim) and stand.record(victim) is None
    assert stand.dp.standby_state(victim).eligibility is Eligibility.INELIGIBLE
    assert stand.ann(victim.id.name, keys.ANN_DRAIN_INELIGIBLE) == "true"
    assert stand.events("DrainCompleted") and not stand.events("DrainRegressed")

    # The engine deletes the pod; its finalizer goes at once (the drain already unregistered it).
    # (That the kubelet's SIGTERM then does not bring the record back: test_v01_adapter's last test.)
    stand.core.delete_namespaced_pod(victim.id.name, stand.namespace)
    stand.run(agent, primary.id.name)
    eventually(lambda: stand.pod(victim.id.name) is None, timeout=30, what="the pod gone")
    assert stand.record(victim) is None and not stand.listed(primary, victim)


def test_external_deletion_takes_the_standby_out_before_the_finalizer_goes(stand: Stand, healthy: Pooler) -> None:
    primary = healthy
    victim = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != primary.id)
    stand.core.delete_namespaced_pod(victim.id.name, stand.namespace)  # kubectl delete pod, no drain
    agent = stand.agent()
    stand.run(agent, primary.id.name)
    eventually(lambda: stand.pod(victim.id.name) is None, timeout=30, what="the finalizer removed")
    assert stand.record(victim) is None and stand.events("PoolerUnregistered") and not stand.events("ExternalDeletion")
    assert not stand.listed(primary, victim)
    assert stand.dp.standby_state(victim).eligibility is Eligibility.INELIGIBLE


def test_a_standby_that_comes_back_sends_the_drain_back_a_step(stand: Stand, healthy: Pooler) -> None:
    """The pooler is made ELIGIBLE again (what a restart does) just before the agent deletes its
    record: the proof taken after the delete fails, the drain returns to `draining` and only reaches
    ready-for-deletion once the standby is out again."""
    primary = healthy
    victim = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != primary.id)
    states: list[str] = []

    def restart_before_unregister(effect: str) -> None:
        states.append(effect)
        if effect == "unregister" and states.count("unregister") == 1:
            stand.dp.make_eligible(victim)
            eventually(lambda: stand.listed(primary, victim), timeout=60, what="multiorch adding it back")

    agent = stand.agent(before_effect=restart_before_unregister)
    stand.request_drain(victim.id.name)
    eventually(lambda: (stand.run(agent, victim.id.name), stand.ann(victim.id.name, keys.ANN_DRAIN_STATE))[1] == RFD,
               timeout=90, what="the drain reaching ready-for-deletion after going back")
    assert stand.events("DrainRegressed")
    writes = [s for s in states if s in {f"write:{state}" for state in keys.DrainState}]
    assert writes == ["write:draining", "write:acknowledged", "write:draining", "write:acknowledged", f"write:{RFD}"]
    assert not stand.listed(primary, victim)
    assert stand.dp.standby_state(victim).eligibility is Eligibility.INELIGIBLE


def test_cancelled_drain_makes_the_standby_eligible_again(stand: Stand, healthy: Pooler) -> None:
    primary = healthy
    victim = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != primary.id)

    def stop_before_remove(effect: str) -> None:
        if effect == "remove-standby":
            raise SimulatedCrash(effect)

    stand.request_drain(victim.id.name)
    with pytest.raises(SimulatedCrash):
        stand.run(stand.agent(before_effect=stop_before_remove), victim.id.name)
    assert stand.dp.standby_state(victim).eligibility is Eligibility.INELIGIBLE
    # Someone cancels the drain (the engine's cancel removes these annotations).
    stand.core.patch_namespaced_pod(victim.id.name, stand.namespace, {"metadata": {"annotations": dict.fromkeys(
        (keys.ANN_DRAIN_STATE, keys.ANN_DRAIN_REQUESTED_AT, keys.ANN_DRAIN_REASON))}})
    stand.run(stand.agent(), victim.id.name)
    assert stand.ann(victim.id.name, keys.ANN_DRAIN_INELIGIBLE) is None and stand.events("EligibilityRestored")
    eventually(lambda: stand.listed(primary, victim), timeout=60, what="the standby back in the cohort")


def test_declared_era_a_on_a_v01_shard_refuses_every_step(stand: Stand, healthy: Pooler) -> None:
    victim = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != healthy.id)
    era_a = EraA(rpc_timeout=5, dial_host=stand.dp._dial_host)
    try:
        stand.request_drain(victim.id.name)
        stand.run(stand.agent(dataplane=era_a), victim.id.name)
        assert stand.ann(victim.id.name, keys.ANN_DRAIN_STATE) == keys.DrainState.REQUESTED.value
        assert stand.ann(victim.id.name, keys.ANN_DRAIN_BLOCKED) == "version-mismatch"
        assert stand.events("VersionMismatch") and stand.events("DrainBlocked")
        assert stand.listed(healthy, victim) and stand.record(victim) is not None
    finally:
        era_a.close()


def test_primary_drain_waits_for_a_standby_pod_that_does_not_stream(stand: Stand, healthy: Pooler) -> None:
    """The real primary's connected followers name its two streaming standbys as their pods are named,
    so only a pod whose pooler streams nothing holds the primary's drain in `requested` (a fourth
    record, at a port nothing listens on); once --primary-drain-settle is over the drain goes on. The
    agent is stopped before its first write each time: this shard's primary stays."""
    primary = healthy
    model = next(p for p in stand.dp.list_poolers(stand.shard.topology()) if p.id != primary.id)
    silent = f"{model.id.name}-silent"
    record = cm.MultiPooler()
    record.CopyFrom(model.native)
    record.id.name, record.port_map["grpc"] = silent, 1
    key = model.key.replace(f"-{model.id.name}/", f"-{silent}/")
    etcd = Etcd(stand.shard.etcd_endpoint)
    etcd.put(key, record.SerializeToString())
    try:
        pod = pool_pod(stand.shard, model.id.cell, stand.namespace, stand.sid)
        pod["metadata"]["name"] = silent
        stand.core.create_namespaced_pod(stand.namespace, pod)
        stand.request_drain(primary.id.name)
        effects: list[str] = []

        def stop_at_first_write(effect: str) -> None:
            effects.append(effect)
            if effect == "write:draining":
                raise SimulatedCrash(effect)

        stand.run(stand.agent(before_effect=stop_at_first_write), primary.id.name)
        assert "write:draining" not in effects
        assert stand.ann(primary.id.name, keys.ANN_DRAIN_STATE) == keys.DrainState.REQUESTED.value
        assert stand.ann(primary.id.name, keys.ANN_DRAIN_BLOCKED) == "standbys-not-streaming"
        [event] = stand.events("DrainBlocked")
        named = event.message.split(" (", 1)[1].split(" not streaming from the primary yet")[0].split(", ")
        assert event.type == "Normal" and named == [silent], event.message

        settled = AgentConfig(register_topology=False, primary_drain_settle_s=0)
        with pytest.raises(SimulatedCrash):
            stand.run(stand.agent(config=settled, before_effect=stop_at_first_write), primary.id.name)
    finally:
        etcd.delete(key)
