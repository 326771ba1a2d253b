"""A shard for the agent to work on: real pool pods in a real API server, one multipooler test peer per
pod registered in a real etcd, and an Agent wired to both. Used by the integration tests and bench/drain.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from kubernetes import client

from multigres_pools.agent.context import AgentConfig, Context
from multigres_pools.agent.core import Agent
from multigres_pools.agent.kube import Kube, now_rfc3339
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.playground.era_a_double import MultipoolerPeer

CELL = "zone1"


def pool_pod(name: str, namespace: str, sid: naming.ShardId, topo_address: str, root: str,
             finalizer: bool = True) -> dict[str, Any]:
    """A pool pod as the renderer makes it, reduced to what the agent reads (contract §3.9)."""
    args = ["multipooler", "--http-port=15200", "--grpc-port=15270",
            f"--topo-global-server-addresses={topo_address}", f"--topo-global-root={root}",
            f"--cell={CELL}", f"--database={sid.database}", f"--table-group={sid.tablegroup}",
            f"--shard={sid.shard}", f"--service-id={naming.service_id(name)}"]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {**labels.pool_labels(sid, "default", CELL), keys.LABEL_DNS: keys.DNS_PUBLISHED},
                     "finalizers": [keys.FINALIZER_POD] if finalizer else []},
        "spec": {
            "hostname": name, "subdomain": "hl",
            "initContainers": [{"name": "multipooler", "image": "multigres", "args": args,
                                "restartPolicy": "Always"}],
            "containers": [{"name": "postgres", "image": "pgctld"}],
        },
    }


@dataclass
class ShardRig:
    api: client.ApiClient
    namespace: str
    etcd_endpoint: str
    client: KubeClient  # the agent's
    replicas: int = 3
    config: AgentConfig = field(default_factory=lambda: AgentConfig(register_topology=False))
    topo_address: str | None = None  # what the pods say (defaults to the real etcd)
    before_effect: Callable[[str], None] | None = None
    sid: naming.ShardId = field(init=False)
    root: str = field(init=False)
    peers: dict[str, MultipoolerPeer] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        tag = uuid.uuid4().hex[:6]
        self.sid = naming.ShardId(f"c{tag}", "postgres", "default", "0-inf")
        self.root = f"/rig-{tag}/global"
        self.core = client.CoreV1Api(self.api)
        self.etcd = Etcd(self.etcd_endpoint)
        self._dataplanes: list[EraA] = []

    @property
    def names(self) -> list[str]:
        return [naming.pod_name(self.sid, "default", CELL, i) for i in range(self.replicas)]

    def hostname(self, pod: str) -> str:
        return f"{pod}.hl.{self.namespace}.svc.cluster.local"

    def start(self, primary: int = 0, sync: list[int] | None = None) -> ShardRig:
        """Create the pods and peers; `primary` is PRIMARY and lists `sync` (default: all others)."""
        address = self.topo_address or self.etcd_endpoint.removeprefix("http://")
        for i, name in enumerate(self.names):
            manifest = pool_pod(name, self.namespace, self.sid, address, self.root)
            self.core.create_namespaced_pod(self.namespace, manifest)
            peer = MultipoolerPeer(cell=CELL, service_id=naming.service_id(name), hostname=self.hostname(name),
                                   role="PRIMARY" if i == primary else "REPLICA").start()
            self.peers[name] = peer
        sync = [i for i in range(self.replicas) if i != primary] if sync is None else sync
        self.primary_peer.set_sync_standbys([(CELL, naming.service_id(self.names[i])) for i in sync])
        self.primary_peer.set_connected([(CELL, naming.service_id(self.names[i])) for i in sync])
        for peer in self.peers.values():
            peer.register(self.etcd_endpoint, self.root)
        return self

    @property
    def primary_peer(self) -> MultipoolerPeer:
        return next(p for p in self.peers.values() if p.role == "PRIMARY")

    def agent(self, **ctx_overrides: Any) -> Agent:
        dp = EraA(dial_host=lambda host: "127.0.0.1", rpc_timeout=2, etcd_timeout=2)
        settings = {"config": self.config, "before_effect": self.before_effect, **ctx_overrides}
        ctx = Context(kube=Kube(self.client), dataplane=dp, **settings)
        self._dataplanes.append(dp)
        return Agent(ctx)

    def pod(self, name: str) -> dict[str, Any] | None:
        return Kube(self.client).get_pod(self.namespace, name)

    def request_drain(self, name: str, reason: keys.DrainReason = keys.DrainReason.SCALE_DOWN) -> None:
        """What the engine writes to start a drain (contract §3.4 initiateDrain)."""
        self.core.patch_namespaced_pod(name, self.namespace, {"metadata": {"annotations": {
            keys.ANN_DRAIN_STATE: keys.DrainState.REQUESTED.value,
            keys.ANN_DRAIN_REQUESTED_AT: now_rfc3339(), keys.ANN_DRAIN_REASON: reason.value}}})

    def state(self, name: str) -> str | None:
        pod = self.pod(name)
        return None if pod is None else (pod["metadata"].get("annotations") or {}).get(keys.ANN_DRAIN_STATE)

    def annotation(self, name: str, key: str) -> str | None:
        pod = self.pod(name)
        return None if pod is None else (pod["metadata"].get("annotations") or {}).get(key)

    def role(self, name: str) -> str | None:
        return self.label(name, keys.LABEL_ROLE)

    def label(self, name: str, key: str) -> str | None:
        pod = self.pod(name)
        return None if pod is None else (pod["metadata"].get("labels") or {}).get(key)

    def record_exists(self, name: str) -> bool:
        return self.etcd.get(naming.pooler_key(self.root, CELL, naming.service_id(name))) is not None

    def in_sync_list(self, name: str) -> bool:
        return (CELL, naming.service_id(name)) in self.primary_peer.sync_standbys()

    def events(self, reason: str | None = None) -> list[Any]:
        items = self.core.list_namespaced_event(self.namespace).items
        return [e for e in items if reason is None or e.reason == reason]

    def run(self, agent: Agent, name: str | None = None) -> None:
        """One agent pass for the shard (what a pod event triggers)."""
        agent.on_pod(self.pod(name or self.names[0]))

    def stop(self) -> None:
        for dp in self._dataplanes:
            dp.close()  # before the peers go, so no channel sees them vanish
        for peer in self.peers.values():
            peer.stop()
        for key, _ in self.etcd.get_prefix(self.root.rsplit("/", 1)[0] + "/"):
            self.etcd.delete(key)
