"""A whole multigres.pools installation on this machine, for the demo, the end-to-end test and the
operator benchmark.

What runs for real: the API server, controller-manager and both etcds (the playground cluster), the
operator and the agent (as child processes, exactly as in their containers). What is simulated,
because it cannot run here, is what happens on the nodes: `SimulatedNodes` plays the kubelet
(binding PVCs, starting and readying pods), runs one multipooler test peer per pod (it registers in
the topology etcd as the real pooler does), and plays multiorch's part in replication: it elects a
primary when there is none and adds every replica that comes up to the primary's synchronous
standby list. It never removes a standby: that is the agent's job during a drain, and the
end-to-end test checks that it happened before each pod disappeared.

This module also starts the agent for the stack (`python -m multigres_pools.playground.localstack agent ...`):
the agent's own entry point, with gRPC dialled at 127.0.0.1, which is what cluster DNS does for the
pod hostnames the peers publish.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, connect
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..paths import collection_root
from . import ports, reaper
from .kubeclient import api_client

REPO_ROOT = collection_root()

FIELD_MANAGER = "multigres-pools-localstack"
_T = TypeVar("_T")


# Our own Python servers (operator, agent) take these; the kube and etcd servers retry (ports.py).
free_port = ports.free_port


def child_env() -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "PYTHONUNBUFFERED": "1"}


@dataclass
class Process:
    """A child process whose output goes to a log file; stop() is graceful, kill() is SIGKILL."""

    name: str
    argv: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0
    env: dict[str, str] = field(default_factory=dict)  # on top of child_env()

    def start(self) -> Process:
        with self.log.open("ab") as handle:
            handle.write(f"\n=== start #{self.starts + 1}: {' '.join(self.argv)}\n".encode())
            handle.flush()
            self.popen = subprocess.Popen(self.argv, stdout=handle, stderr=subprocess.STDOUT,
                                          env={**child_env(), **self.env}, start_new_session=True)
        reaper.spawned(self.popen, self.argv)
        self.starts += 1
        return self

    @property
    def pid(self) -> int | None:
        return None if self.popen is None else self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 30) -> int | None:
        if not self.alive():
            return None if self.popen is None else self.popen.returncode
        assert self.popen is not None
        self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self) -> int | None:
        """SIGKILL the process and everything it started (ansible-playbook runs included)."""
        if self.popen is None:
            return None
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGKILL)
        return self.popen.wait(10)

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def http_get(url: str, timeout: float = 2) -> tuple[int, str]:
    """(status, body); status 0 when nothing answers."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def reconcile_count(port: int, result: str = "") -> float:
    """Reconcile passes an operator on `port` has finished, all results or one (from /metrics)."""
    return reconciles_in(http_get(f"http://127.0.0.1:{port}/metrics")[1], result)


def reconciles_in(body: str, result: str = "") -> float:
    """Reconcile passes counted in an operator's /metrics text, all results or one."""
    pattern = rf'^multigres_pools_operator_reconciles_total\{{result="{result or "[a-z]+"}"\}} (\S+)$'
    return sum(float(v) for v in re.findall(pattern, body, re.M))


def wait_for(check: Callable[[], _T | None], timeout: float, what: str, interval: float = 0.2,
             last_seen: Callable[[], str] | None = None) -> _T:
    """Polls `check` until it returns a truthy value; a timeout names `what` and, when given,
    `last_seen()`: what the check saw on its last try, so a failure says why without a rerun."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f"; last seen: {last_seen()}" if last_seen else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{seen}")
        time.sleep(interval)


# --- the cluster side ---------------------------------------------------------------------------
def install_crd(kube: KubeClient) -> None:
    from multigres_pools.install import crd

    doc = crd.shard_crd()
    kube.apply(doc, FIELD_MANAGER, force=True)

    def established() -> bool:
        live = kube.get(doc["apiVersion"], doc["kind"], None, doc["metadata"]["name"]) or {}
        return facts.condition_true(live, "Established")

    wait_for(established, 60, "the MultigresShard CRD to be established")


def ensure_namespace(kube: KubeClient, namespace: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, FIELD_MANAGER)


def pod_index(pod: Manifest) -> int:
    return int(((pod.get("metadata") or {}).get("labels") or {}).get(keys.LABEL_INDEX, "-1"))


def is_ready(pod: Manifest) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


@dataclass
class _Peer:
    uid: str
    pod: str
    cell: str
    index: int
    peer: Any  # multigres_pools.playground.era_a_double.MultipoolerPeer


@dataclass
class SyncSnapshot:
    at: float
    primary: str | None
    standbys: tuple[str, ...]  # pod names in the primary's synchronous standby list


class SimulatedNodes(threading.Thread):
    """The kubelet, the multipoolers, MultiOrch's Deployment status and its replication set-up, for
    the pods of one namespace."""

    def __init__(self, kubeconfig: Path, namespace: str, topo_endpoint: str, topo_root: str,
                 interval: float = 0.2) -> None:
        super().__init__(name="simulated-nodes", daemon=True)
        self.kubeconfig, self.namespace = kubeconfig, namespace
        self.topo_endpoint, self.topo_root = topo_endpoint, topo_root
        self.interval = interval
        self.peers: dict[str, _Peer] = {}
        self.history: list[SyncSnapshot] = []
        self._joined: set[tuple[str, str]] = set()  # (primary pod uid, standby pod uid)
        self.errors: list[str] = []
        self._halt = threading.Event()
        self._lock = threading.Lock()

    # --- public views -------------------------------------------------------------------------------
    def primary(self) -> str | None:
        with self._lock:
            return next((p.pod for p in self.peers.values() if p.peer.role == "PRIMARY"), None)

    def sync_standbys(self) -> tuple[str, ...]:
        with self._lock:
            return self._standby_pods()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)
        with self._lock:
            for p in self.peers.values():
                p.peer.stop()
            self.peers.clear()

    # --- the loop -----------------------------------------------------------------------------------
    def run(self) -> None:
        from multigres_pools.playground.kubelet import FakeKubelet

        kubelet = FakeKubelet(api_client(self.kubeconfig))
        kube = connect(str(self.kubeconfig))
        while not self._halt.is_set():
            try:
                self.step(kube, kubelet)
            except Exception as exc:  # keep playing the nodes; the test/demo reports what went wrong
                self.errors.append(f"{type(exc).__name__}: {exc}")
                kube.close()
            self._halt.wait(self.interval)

    def step(self, kube: KubeClient, kubelet: Any) -> None:
        kubelet.bind_all_pvcs(self.namespace)
        # MultiOrch: its replication role is played by _elect_and_join.
        kubelet.mark_deployments_available(self.namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_MULTIORCH}")
        pods = kube.list("v1", "Pod", self.namespace, keys.LABEL_SHARD)
        live = {p["metadata"]["name"]: p for p in pods}
        with self._lock:
            for name in [n for n, peer in self.peers.items()
                         if n not in live or live[n]["metadata"]["uid"] != peer.uid]:
                self.peers.pop(name).peer.stop()  # the pod is gone: its pooler process goes with it
            for name, pod in sorted(live.items(), key=lambda item: pod_index(item[1])):
                if name not in self.peers and not pod["metadata"].get("deletionTimestamp"):
                    self._start_peer(pod)
            self._elect_and_join()
            self._record()
        for name, pod in live.items():
            if name in self.peers and not pod["metadata"].get("deletionTimestamp") and not is_ready(pod):
                kubelet.mark_ready(self.namespace, name)

    def _start_peer(self, pod: Manifest) -> None:
        from multigres_pools.playground.era_a_double import MultipoolerPeer

        meta, spec = pod["metadata"], pod.get("spec") or {}
        labels = meta.get("labels") or {}
        hostname = f"{spec.get('hostname', meta['name'])}.{spec.get('subdomain', '')}.{self.namespace}" \
                   ".svc.cluster.local"
        peer = MultipoolerPeer(cell=labels[keys.LABEL_CELL], service_id=naming.service_id(meta["name"]),
                               hostname=hostname, database=labels[keys.LABEL_DATABASE],
                               table_group=labels[keys.LABEL_TABLEGROUP], shard=labels[keys.LABEL_SHARD]).start()
        self.peers[meta["name"]] = _Peer(meta["uid"], meta["name"], labels[keys.LABEL_CELL], pod_index(pod), peer)
        peer.register(self.topo_endpoint, self.topo_root)

    def _elect_and_join(self) -> None:
        peers = sorted(self.peers.values(), key=lambda p: p.index)
        primary = next((p for p in peers if p.peer.role == "PRIMARY"), None)
        if primary is None and peers:
            primary = peers[0]
            primary.peer.set_role("PRIMARY")
            primary.peer.register(self.topo_endpoint, self.topo_root)
            primary.peer.set_sync_standbys([])
        if primary is None:
            return
        standbys = list(primary.peer.sync_standbys())
        present = {sid for _, sid in standbys}
        # Each pod joins a primary's synchronous list once; a standby the agent removed stays out
        # until its pod is recreated (a new uid) or another pod becomes primary.
        joining = [p for p in peers if p is not primary and (primary.uid, p.uid) not in self._joined]
        self._joined.update((primary.uid, p.uid) for p in joining)
        added = [(p.cell, p.peer.service_id) for p in joining if p.peer.service_id not in present]
        if added:
            primary.peer.set_sync_standbys(standbys + added)
            primary.peer.set_connected(standbys + added)

    def _standby_pods(self) -> tuple[str, ...]:
        primary = next((p for p in self.peers.values() if p.peer.role == "PRIMARY"), None)
        if primary is None:
            return ()
        by_id = {p.peer.service_id: p.pod for p in self.peers.values()}
        return tuple(sorted(by_id.get(sid, sid) for _, sid in primary.peer.sync_standbys()))

    def _record(self) -> None:
        primary = next((p.pod for p in self.peers.values() if p.peer.role == "PRIMARY"), None)
        snap = SyncSnapshot(time.monotonic(), primary, self._standby_pods())
        if not self.history or (self.history[-1].primary, self.history[-1].standbys) != (snap.primary, snap.standbys):
            self.history.append(snap)


# --- what happened to the pods --------------------------------------------------------------------
@dataclass(frozen=True)
class PodEvent:
    at: float
    type: str
    name: str
    uid: str
    index: int
    drain: str | None
    role: str | None
    ready: bool
    deleting: bool
    images: tuple[str, ...]
    backup: str | None = None  # the agent's backup mark (keys.ANN_BACKUP_RUNNING)
    reason: str | None = None  # why the drain was asked for (keys.ANN_DRAIN_REASON)
    blocked: str | None = None  # what the drain waits for now (keys.ANN_DRAIN_BLOCKED)
    conditions: frozenset[str] = frozenset()  # the pod's conditions that are True
    ready_containers: frozenset[str] = frozenset()  # its containers (sidecars too) that are ready


def pod_event(event_type: str, pod: Manifest, at: float) -> PodEvent:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return PodEvent(at=at, type=event_type, name=meta.get("name", ""), uid=meta.get("uid", ""),
                    index=pod_index(pod), drain=(meta.get("annotations") or {}).get(keys.ANN_DRAIN_STATE),
                    role=(meta.get("labels") or {}).get(keys.LABEL_ROLE), ready=is_ready(pod),
                    deleting=bool(meta.get("deletionTimestamp")),
                    images=tuple(c.get("image", "") for key in ("initContainers", "containers")
                                 for c in (pod.get("spec") or {}).get(key) or []),
                    backup=(meta.get("annotations") or {}).get(keys.ANN_BACKUP_RUNNING),
                    reason=(meta.get("annotations") or {}).get(keys.ANN_DRAIN_REASON),
                    blocked=(meta.get("annotations") or {}).get(keys.ANN_DRAIN_BLOCKED),
                    conditions=frozenset(c.get("type", "") for c in status.get("conditions") or []
                                         if c.get("status") == "True"),
                    ready_containers=frozenset(c.get("name", "") for key in ("initContainerStatuses",
                                                                             "containerStatuses")
                                               for c in status.get(key) or [] if c.get("ready")))


class PodTimeline(threading.Thread):
    """Every version of every pool pod, from a watch, so no short-lived drain state goes unseen."""

    def __init__(self, kubeconfig: Path, namespace: str, cluster: str | None = None) -> None:
        """`cluster`: only that shard's pods (clusterName), when the namespace serves more than one."""
        super().__init__(name="pod-timeline", daemon=True)
        self.kubeconfig, self.namespace = kubeconfig, namespace
        self.selector = keys.LABEL_SHARD + (f",{keys.LABEL_APP_INSTANCE}={cluster}" if cluster else "")
        self.events: list[PodEvent] = []
        # Called with each event as it arrives, on the watch thread (e.g. to inject a fault at an
        # exact moment of a drain).
        self.listeners: list[Callable[[PodEvent], None]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        from kubernetes import client, watch

        core = client.CoreV1Api(api_client(self.kubeconfig))
        version = ""
        while not self._halt.is_set():
            stream = watch.Watch()
            try:
                for ev in stream.stream(core.list_namespaced_pod, self.namespace, label_selector=self.selector,
                                        resource_version=version, timeout_seconds=5):
                    obj = core.api_client.sanitize_for_serialization(ev["object"])
                    version = obj["metadata"].get("resourceVersion", version)
                    event = pod_event(ev["type"], obj, time.monotonic())
                    self.events.append(event)
                    for listener in self.listeners:
                        listener(event)
                    if self._halt.is_set():
                        break
            except Exception:  # an expired resourceVersion or a dropped stream: start over
                version = ""
                time.sleep(0.2)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def of(self, uid: str) -> list[PodEvent]:
        return [e for e in self.events if e.uid == uid]

    def drain_states(self, uid: str) -> list[str]:
        seen: list[str] = []
        for e in self.of(uid):
            if e.drain and (not seen or seen[-1] != e.drain):
                seen.append(e.drain)
        return seen

    def drain_reasons(self, uid: str) -> set[str]:
        return {e.reason for e in self.of(uid) if e.reason}

    def drain_blocks(self, uid: str) -> list[str]:
        """What the pod's drain was held for, each reason once, in the order first seen."""
        return list(dict.fromkeys(e.blocked for e in self.of(uid) if e.blocked))

    def deleted_at(self, uid: str) -> float | None:
        return next((e.at for e in self.of(uid) if e.type == "DELETED"), None)

    def created_at(self, uid: str) -> float | None:
        return next((e.at for e in self.of(uid)), None)

    def uids(self) -> list[str]:
        return list(dict.fromkeys(e.uid for e in self.events))


# --- the whole stack ------------------------------------------------------------------------------
@dataclass
class LocalStack:
    kubeconfig: Path
    topo_endpoint: str
    namespace: str
    workdir: Path
    topo_root: str = "/multigres/global"
    operator_args: list[str] = field(default_factory=list)
    # The identities the two programs run as (e.g. token kubeconfigs of the bundle's ServiceAccounts)
    # and where the operator's Lease lives; default: `kubeconfig` and `namespace`.
    operator_kubeconfig: Path | None = None
    agent_kubeconfig: Path | None = None
    lease_namespace: str | None = None
    operator: Process | None = None
    agent: Process | None = None
    nodes: SimulatedNodes | None = None
    operator_port: int = field(default_factory=free_port)

    def kube(self) -> KubeClient:
        return connect(str(self.kubeconfig))

    def prepare(self) -> None:
        kube = self.kube()
        install_crd(kube)
        ensure_namespace(kube, self.namespace)
        kube.close()

    def start(self) -> LocalStack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        self.nodes = SimulatedNodes(self.kubeconfig, self.namespace, self.topo_endpoint, self.topo_root)
        self.nodes.start()
        self.operator = Process("operator", [
            sys.executable, "-m", "multigres_pools.operator", "--namespace", self.namespace,
            "--kubeconfig", str(self.operator_kubeconfig or self.kubeconfig),
            "--health-addr", f"127.0.0.1:{self.operator_port}",
            "--lease-namespace", self.lease_namespace or self.namespace, "--identity", "localstack-operator",
            "--log-format", "text",
            "--artifacts-dir", str(self.workdir / "runner"), "--coalesce", "0.05", *self.operator_args,
        ], self.workdir / "operator.log").start()
        self.agent = Process("agent", [
            sys.executable, "-m", "multigres_pools.playground.localstack", "agent",
            "--kubeconfig", str(self.agent_kubeconfig or self.kubeconfig),
            "--namespace", self.namespace, "--http", f"127.0.0.1:{free_port()}", "--standalone",
            "--multigres-version", keys.MultigresVersion.ERA_A.value,  # its poolers are era-A doubles
            "--poll-interval", "1", "--lease-namespace", self.namespace,
        ], self.workdir / "agent.log").start()
        return self

    def stop(self) -> None:
        if self.operator is not None:
            self.operator.stop()
        if self.agent is not None:
            # The agent does not always exit promptly on SIGTERM yet (reported); the demo should not wait.
            self.agent.stop(grace=5)
        if self.nodes is not None:
            self.nodes.stop()

    def operator_ready(self) -> bool:
        return http_get(f"http://127.0.0.1:{self.operator_port}/readyz")[0] == 200

    def reconciles(self) -> int:
        return int(reconcile_count(self.operator_port))

    # --- the shard ------------------------------------------------------------------------------------
    def apply_shard(self, doc: Manifest) -> Manifest:
        kube = self.kube()
        try:
            return kube.apply(doc, FIELD_MANAGER, force=True)
        finally:
            kube.close()

    def get_shard(self, name: str) -> Manifest | None:
        kube = self.kube()
        try:
            return kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, name)
        finally:
            kube.close()

    def pods(self) -> list[Manifest]:
        kube = self.kube()
        try:
            return sorted(kube.list("v1", "Pod", self.namespace, keys.LABEL_SHARD), key=pod_index)
        finally:
            kube.close()


def _agent_main(argv: list[str]) -> int:
    from multigres_pools import logs
    from multigres_pools.agent import __main__ as agent_main

    args = agent_main.parser().parse_args(argv)
    logs.setup(args.log_level)
    agent_main.build(argv, dial_host=lambda _hostname: "127.0.0.1").run()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["agent"]:
        sys.exit(_agent_main(sys.argv[2:]))
    sys.exit("usage: python -m multigres_pools.playground.localstack agent <agent args>")
