"""A whole multigres.pools installation on real Multigres v0.1.0 and PostgreSQL 17, on this machine.

What runs for real: etcd, kube-apiserver and kube-controller-manager (with the deployment and
replicaset controllers), the operator and the agent (as child processes, as in their containers),
the topology etcd, and every container of every pod: pgctld, PostgreSQL 17, pgBackRest, multipooler,
multiorch and multigateway, run by the process kubelet in their own network namespaces. Nothing of
Multigres is simulated.

    stack = MultigresStack(workdir).start()
    stack.apply_shard(stack.sample_shard(replicas=3))
    stack.wait_serving("play", replicas=3)       # one primary, two synchronous standbys, from SQL
    ...
    stack.stop()

With `node="real"` the pods run as containers of the images `make images` builds, on a real kubelet
with containerd, runc, CNI, kube-proxy, CoreDNS and an enforced NetworkPolicy (realnode/), and the
operator and the agent are installed from the bundle as docs/install.md says, into a namespace
that enforces the restricted Pod Security profile.

`multigres-pools localstack up` runs it until `localstack down` or Ctrl-C (docs/playground.md).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import psycopg
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, connect
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..agent import podinfo
from ..dataplane.base import PoolerId
from ..paths import collection_root
from ..podaddress import pod_address, pod_ip
from . import toolchain as toolchain_module
from .cluster import Cluster, Etcd
from .kubeclient import api_client
from .localstack import Process, ensure_namespace, free_port, install_crd, wait_for
from .process_kubelet import DEFAULT_BACKOFF, ProcessKubelet, toolchain_images
from .realnode.install import install_bundle, restricted_namespace
from .realnode.node import NodeNet, RealNode, claim
from .realnode.preflight import NODES

SAMPLE = collection_root() / "examples" / "playground-shard.yaml"
FIELD_MANAGER = "multigres-pools-playground"
# What crash() can kill and restart.
CRASHABLE = ("operator", "agent", "topology-etcd", "kube-apiserver")
Progress = Callable[[str], None]


@dataclass
class Member:
    """One pool pod as PostgreSQL sees itself."""

    pod: str
    ip: str
    primary: bool
    synchronous_standby_names: str
    replicas: tuple[tuple[str, str], ...]  # (application_name, sync_state) from pg_stat_replication
    # What a wait that timed out says of replication (`wait_serving`): the walsenders' `state`
    # (application_name -> startup, catchup, streaming) and this pod's own WAL receiver ("" if none).
    sender_states: tuple[tuple[str, str], ...] = ()
    receiver: str = ""


def _pids_of(binary: bytes, argument: bytes) -> list[int]:
    """Host pids of the processes whose executable ends with `binary` and that were given `argument`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(binary) and argument in argv:
            found.append(int(entry.name))
    return found


@dataclass
class MultigresStack:
    workdir: Path
    namespace: str = "play"
    progress: Progress = print
    cluster: Cluster | None = None
    kubelet: ProcessKubelet | None = None
    topo: Etcd | None = None
    operator: Process | None = None
    agent: Process | None = None
    operator_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    agent_args: tuple[str, ...] = ()  # more agent flags, e.g. --grpc-ca/--grpc-cert/--grpc-key
    node: str = "process"  # one of NODES
    sized_claims: bool = False  # process node: each claim a filesystem of its request's size (claimfs)
    kubelet_backoff: tuple[float, float] = DEFAULT_BACKOFF  # process node: crash-loop delay (first, max), in s
    net: NodeNet | None = None
    real: RealNode | None = None
    # Each thread's client for the stack's own reads (pods(), password(), ...), kept open until stop():
    # tests, loads and samplers poll these many times a second, and a client per call cost a TLS
    # handshake each on both sides (most of the API server's CPU in a stack module).
    _readers: threading.local = field(default_factory=threading.local, repr=False)
    _reader_list: list[KubeClient] = field(default_factory=list, repr=False)

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> MultigresStack:
        if self.node not in NODES:
            raise ValueError(f"node: {self.node!r} is not one of {', '.join(NODES)}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start_real() if self.node == "real" else self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_real(self) -> None:
        self.net = self._step("the real node's network", claim)
        network = self.net.cluster_network()
        cluster = self.cluster = self._step("etcd, kube-apiserver, kube-controller-manager", lambda: Cluster(
            self.workdir / "cluster", workload_controllers=True, node=network).start())
        net = self.net
        self.real = self._step("the real node: containerd, kubelet, kube-proxy, CoreDNS, kube-router, provisioner",
                               lambda: RealNode(net, cluster, self.progress).start())
        self.topo = self._step("the topology etcd", self._start_topo)
        restricted_namespace(self.kubeconfig, self.namespace)
        self._step("the operator and the agent from the install bundle", lambda: install_bundle(
            self.kubeconfig, self.workdir / "bundle", (self.namespace,)))

    def _start(self) -> None:
        tool = self._step("the Multigres v0.1.0 toolchain", lambda: toolchain_module.ensure(self.progress))
        cluster = self.cluster = self._step("etcd, kube-apiserver, kube-controller-manager",
                                            lambda: Cluster(self.workdir / "cluster",
                                                            workload_controllers=True).start())
        self.kubelet = self._step("the process kubelet", lambda: ProcessKubelet(
            api_client(cluster.kubeconfig), toolchain_images(tool), tool.user,
            workdir=self.workdir / "kubelet", sized_claims=self.sized_claims,
            backoff=self.kubelet_backoff).start())
        self.topo = self._step("the topology etcd", self._start_topo)
        kube = self.kube()
        try:
            install_crd(kube)
            ensure_namespace(kube, self.namespace)
        finally:
            kube.close()
        self.operator = Process("operator", [
            sys.executable, "-m", "multigres_pools.operator", "--namespace", self.namespace,
            "--kubeconfig", str(self.kubeconfig), "--health-addr", f"127.0.0.1:{self.operator_port}",
            "--lease-namespace", self.namespace, "--identity", "playground-operator", "--log-format", "text",
            "--artifacts-dir", str(self.workdir / "runner"), "--coalesce", "0.05",
        ], self.workdir / "operator.log").start()
        self.agent = Process("agent", self._agent_argv(), self.workdir / "agent.log").start()

    def _agent_argv(self, crash_before: str | None = None) -> list[str]:
        crash = ["--crash-before", crash_before] if crash_before else []
        return [sys.executable, "-m", "multigres_pools.playground.multigres_stack", "agent", *crash,
                "--kubeconfig", str(self.kubeconfig), "--namespace", self.namespace,
                "--http", f"127.0.0.1:{self.agent_port}", "--standalone", "--poll-interval", "1",
                "--lease-namespace", self.namespace, "--stall-after", "120", *self.agent_args]

    def restart_agent(self, crash_before: str | None = None) -> Process:
        """SIGKILL the agent if it runs, and start it again; with `crash_before`, the new agent SIGKILLs
        itself right before its first side effect of that name (`Context.effect`: `write:draining`,
        `make-ineligible`, `remove-standby`, `unregister`, ...), as a crash at that exact point would."""
        assert self.agent is not None, "the stack is not started"
        self.agent.kill()
        self.agent.argv = self._agent_argv(crash_before)
        return self.agent.start()

    def crash(self, component: str, down: float = 0.0) -> None:
        """SIGKILL one of CRASHABLE, leave it down `down` seconds and start it again as it was (same
        arguments, ports and data directory), as a crash and a restart by its supervisor would."""
        assert self.cluster is not None and self.topo is not None, "the stack is not started"
        if component in ("operator", "agent"):
            proc = self.operator if component == "operator" else self.agent
            assert proc is not None
            proc.kill()
            time.sleep(down)
            proc.start()
        elif component == "topology-etcd":
            self.topo.restart(down)
        elif component == "kube-apiserver":
            self.cluster.restart_apiserver(down)
        else:
            raise ValueError(f"component: {component!r} is not one of {', '.join(CRASHABLE)}")

    @property
    def host_ip(self) -> str:
        """The node's bridge address: reachable from every pod and from this machine."""
        node = self.real or self.kubelet
        assert node is not None, "the stack is not started"
        return node.host_ip

    def _start_topo(self) -> Etcd:
        assert self.cluster is not None
        etcd = Etcd(self.cluster.paths["etcd"], self.workdir / "topo", self.workdir / "topo.log")
        etcd.host = self.host_ip
        etcd.start()
        etcd.wait_ready()
        return etcd

    def _step(self, what: str, run: Callable[[], Any]) -> Any:
        started = time.monotonic()
        self.progress(f"starting {what} ...")
        value = run()
        self.progress(f"started {what} in {time.monotonic() - started:.1f}s")
        return value

    def stop(self) -> None:
        """Everything it started goes, in reverse order; safe to call twice or after a failed start."""
        for proc in (self.operator, self.agent):
            if proc is not None:
                proc.stop(grace=10)
        if self.kubelet is not None:
            self.progress("stopping the pods (each pool pod's PostgreSQL shuts down cleanly) ...")
            self.kubelet.stop()
        if self.real is not None:
            self.progress("stopping the node and its containers ...")
            self.real.stop()
        if self.topo is not None and self.topo.process is not None:
            self.topo.process.kill()
            self.topo.process.wait(10)
        if self.cluster is not None:
            self.cluster.stop()
        if self.net is not None:
            self.net.release()
        self.operator = self.agent = self.kubelet = self.real = self.net = self.topo = self.cluster = None
        for reader in list(self._reader_list):
            reader.close()
        self._reader_list.clear()
        self._readers = threading.local()

    # --- addresses ---------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        assert self.cluster is not None, "the stack is not started"
        return self.cluster.kubeconfig

    @property
    def topo_address(self) -> str:
        assert self.topo is not None, "the stack is not started"
        return f"{self.host_ip}:{self.topo.port}"

    def kube(self) -> KubeClient:
        return connect(str(self.kubeconfig))

    def _reader(self) -> KubeClient:
        """This thread's kept-open client for the stack's reads (see _readers)."""
        reader: KubeClient | None = getattr(self._readers, "client", None)
        if reader is None:
            reader = self._readers.client = self.kube()
            self._reader_list.append(reader)
        return reader

    def dial_host(self, hostname: str) -> str:
        """A pooler's registered hostname as this machine can dial it (see pod_address)."""
        return pod_address(self._reader(), hostname)

    # --- the shard -----------------------------------------------------------------------------------
    def sample_shard(self, replicas: int = 3, name: str = "play", path: Path = SAMPLE) -> Manifest:
        doc: Manifest = copy.deepcopy(yaml.safe_load(path.read_text()))
        doc["metadata"] = {"name": name, "namespace": self.namespace}
        doc["spec"]["globalTopoServer"]["address"] = self.topo_address
        for pool in doc["spec"]["pools"].values():
            pool["replicasPerCell"] = replicas
        return doc

    def apply_shard(self, doc: Manifest) -> Manifest:
        kube = self.kube()
        try:
            return kube.apply(doc, FIELD_MANAGER, force=True)
        finally:
            kube.close()

    def pods(self, component: str = keys.COMPONENT_POOL, cluster: str = "play") -> list[Manifest]:
        """The pods of one component of one shard (its clusterName): a stack may serve a second shard, such
        as a clone, whose pods the first one's samplers and helpers must not count."""
        found = self._reader().list("v1", "Pod", self.namespace,
                                    f"{keys.LABEL_APP_COMPONENT}={component},{keys.LABEL_APP_INSTANCE}={cluster}")
        return sorted(found, key=facts.name)

    def claim_path(self, pod: str, volume: str) -> Path:
        """Where the process kubelet keeps the claim that `pod` mounts as `volume`."""
        if self.kubelet is None:
            raise LookupError("claim_path: only the process kubelet keeps claims on this machine")
        found = next((p for p in self.pods() if facts.name(p) == pod), None)
        if found is None:
            raise LookupError(f"claim_path: no pool pod {pod!r}")
        claim = next((v["persistentVolumeClaim"]["claimName"] for v in found["spec"].get("volumes") or []
                      if v["name"] == volume and "persistentVolumeClaim" in v), None)
        if claim is None:
            raise LookupError(f"claim_path: pod {pod!r} has no claim mounted as {volume!r}")
        return self.kubelet.pvc_path(self.namespace, claim)

    def pool_addresses(self) -> list[tuple[str, str]]:
        """(name, pod IP) of every pool pod with an address, terminating ones too (an old primary is one)."""
        return [(facts.name(p), ip) for p in self.pods() if (ip := pod_ip(p))]

    def cell_addresses(self) -> dict[str, list[str]]:
        """Cell -> the pod IPs of every pod placed in it: pool pods, multiorch and multigateway."""
        found = self._reader().list("v1", "Pod", self.namespace, keys.LABEL_CELL)
        cells: dict[str, list[str]] = {}
        for pod in sorted(found, key=facts.name):
            if ip := pod_ip(pod):
                cells.setdefault(facts.labels(pod)[keys.LABEL_CELL], []).append(ip)
        return cells

    def password(self, shard: str = "play") -> str:
        kube = self._reader()
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, shard)
        if cr is None:
            raise LookupError(f"no MultigresShard {self.namespace}/{shard}")
        ref = model.load_spec(cr["spec"], root="spec").password_secret()
        secret = kube.get("v1", "Secret", self.namespace, ref.name)
        if secret is None or ref.key not in (secret.get("data") or {}):
            raise LookupError(f"the password Secret {ref.name} has no key {ref.key!r} yet")
        return base64.b64decode(secret["data"][ref.key]).decode()

    def dsn(self, host: str, shard: str = "play", port: int = layout.POSTGRES, password: str | None = None) -> str:
        """`password` (read once by the caller) spares an API call per connection: a client that must
        keep going while the API server is down passes it."""
        # Keepalives and a TCP user timeout: a pod deleted under an open connection takes its address
        # with it, and without them a client waits for the kernel's two-hour keepalive.
        password = self.password(shard) if password is None else password
        return (f"host={host} port={port} user=postgres dbname=postgres password={password} "
                "keepalives_idle=2 keepalives_interval=1 keepalives_count=2 tcp_user_timeout=3000")

    def gateway_dsn(self, shard: str = "play") -> Callable[[str], str]:
        """`dsn` for a multigateway address (its SQL port), the password read once: a client's path, as
        the write loads of `make demo` and the benches take it."""
        password = self.password(shard)
        return lambda host: self.dsn(host, shard, port=layout.MULTIGATEWAY_PG, password=password)

    def url(self, host: str, shard: str = "play", port: int = layout.POSTGRES) -> str:
        return f"postgresql://postgres:{self.password(shard)}@{host}:{port}/postgres"

    # --- the pods' processes ------------------------------------------------------------------------
    def pooler_ids(self) -> dict[str, PoolerId]:
        """Pool pod name -> its pooler's identity (cell, --service-id), read from the pod's arguments."""
        out = {}
        for pod in self.pods():
            top = podinfo.pod_topology(pod)
            if top is not None:
                out[facts.name(pod)] = top.pooler_id
        return out

    def app_name(self, pod: str) -> str:
        """The pod's standby name in synchronous_standby_names and pg_stat_replication: <cell>_<service id>."""
        ident = self.pooler_ids()[pod]
        return f"{ident.cell}_{ident.name}"

    def pooler_pids(self, pod: str) -> list[int]:
        """Host pids of the pod's running multipooler, found in the process list by its --service-id
        (a signal sent from inside the container's pid namespace cannot reach its pid 1)."""
        return _pids_of(b"/multipooler", f"--service-id={self.pooler_ids()[pod].name}".encode())

    def orchestrator_pids(self) -> list[int]:
        """Host pids of every running multiorch of this stack's namespace (its --service-id is its pod's name)."""
        names = {facts.name(p) for p in self.pods(keys.COMPONENT_MULTIORCH)}
        return [pid for name in sorted(names) for pid in _pids_of(b"/multiorch", f"--service-id={name}".encode())]

    def signal_pooler(self, pod: str, sig: int = signal.SIGKILL) -> list[int]:
        """Send `sig` to the pod's multipooler (the kubelet restarts the container, as Kubernetes would)."""
        pids = self.pooler_pids(pod)
        if not pids:
            raise LookupError(f"no multipooler process of pod {pod}")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return pids

    # --- what PostgreSQL says ------------------------------------------------------------------------
    def members(self, shard: str = "play") -> list[Member]:
        """Every running pool pod as its own PostgreSQL reports itself (unreachable pods left out)."""
        out: list[Member] = []
        pods = self.pods()
        try:
            password = self.password(shard)  # once per round, not per pod: each read is two API calls
        except LookupError:
            return out
        for pod in pods:
            ip = pod_ip(pod)
            if not ip or facts.meta(pod).get("deletionTimestamp"):
                continue
            with contextlib.suppress(psycopg.Error):
                with psycopg.connect(self.dsn(ip, shard, password=password), connect_timeout=2,
                                     autocommit=True) as conn:
                    # One row, always: a SELECT without FROM.
                    recovery, names = cast(tuple[bool, str], conn.execute(
                        "SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names')").fetchone())
                    senders = conn.execute(
                        "SELECT application_name, sync_state, state FROM pg_stat_replication ORDER BY 1").fetchall()
                    received = conn.execute("SELECT status, sender_host FROM pg_stat_wal_receiver").fetchone()
                receiver = f"{received[0]} from {received[1]}" if received else ""
                out.append(Member(facts.name(pod), ip, not recovery, names,
                                  tuple((app, sync) for app, sync, _ in senders),
                                  tuple((app, state) for app, _, state in senders), receiver))
        return out

    def primary(self, shard: str = "play") -> Member | None:
        primaries = [m for m in self.members(shard) if m.primary]
        return primaries[0] if len(primaries) == 1 else None

    def primary_ip(self, shard: str = "play") -> str | None:
        """The pod labelled PRIMARY by the agent, else the one whose PostgreSQL is not in recovery."""
        for pod in self.pods():
            if facts.labels(pod).get(keys.LABEL_ROLE) == keys.Role.PRIMARY and not facts.meta(pod).get(
                    "deletionTimestamp"):
                ip = pod_ip(pod)
                if ip:
                    return ip
        found = self.primary(shard)
        return found.ip if found else None

    def gateway_ip(self) -> str | None:
        """A Ready multigateway pod's address (its SQL port is layout.MULTIGATEWAY_PG)."""
        for pod in self.pods(keys.COMPONENT_MULTIGATEWAY):
            if _ready(pod) and (ip := pod_ip(pod)):
                return ip
        return None

    def wait_serving(self, shard: str = "play", replicas: int = 3, timeout: float = 300,
                     progress: Progress | None = None) -> Member:
        """Until one primary streams to every other ready pod synchronously (quorum or sync).
        `progress` gets a one-line summary each time it changes (`serving_summary`)."""
        seen, said = ["nothing yet"], [""]

        def serving() -> Member | None:
            pods = self.pods()
            ready = [facts.name(p) for p in pods if _ready(p)]
            not_ready = sorted({facts.name(p) for p in pods} - set(ready))
            members = self.members(shard)
            primaries = [m for m in members if m.primary]
            primary = primaries[0] if len(primaries) == 1 else None
            seen[0] = (f"ready {sorted(ready)}, not ready {not_ready}, "
                       f"not in recovery {[m.pod for m in primaries]}")
            synchronous = [name for name, state in primary.replicas if state in ("sync", "quorum")] if primary else []
            summary = serving_summary(len(ready), replicas, primary.pod if primary else None, len(synchronous))
            if progress is not None and summary != said[0]:
                said[0] = summary
                progress(summary)
            if len(ready) != replicas or primary is None:
                return None
            seen[0] += (f", {primary.pod} synchronous_standby_names={primary.synchronous_standby_names!r} "
                        f"pg_stat_replication={list(primary.replicas)} walsender states={list(primary.sender_states)}"
                        f", standbys' WAL receivers {receivers(members)}")
            return primary if len(synchronous) == replicas - 1 else None

        return wait_for(serving, timeout, f"{replicas} pods serving with {replicas - 1} synchronous standbys",
                        interval=1, last_seen=lambda: seen[0])


def receivers(members: list[Member]) -> dict[str, str]:
    """Each standby's WAL receiver, as its pg_stat_wal_receiver says: "streaming from <host>", or "none"
    (a standby that replays from the archive, or whose receiver keeps failing to start)."""
    return {m.pod: m.receiver or "none" for m in members if not m.primary}


def serving_summary(ready: int, replicas: int, primary: str | None, synchronous: int) -> str:
    """What a wait for a serving shard has reached, in one line: pods Ready, the primary, its
    synchronous standbys (a shard of one pod has none to wait for)."""
    lead = f"primary {primary}" if primary else "no primary yet"
    standbys = f", {synchronous}/{replicas - 1} synchronous standbys" if replicas > 1 else ""
    return f"{ready}/{replicas} pods ready, {lead}{standbys}"


def _ready(pod: Manifest) -> bool:
    return not facts.meta(pod).get("deletionTimestamp") and facts.condition_true(pod, "Ready")


def _crash_before(effect: str) -> Callable[[str], None]:
    def hook(name: str) -> None:
        if name == effect:
            print(f"crash-before {effect}: SIGKILL", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _agent_main(argv: list[str]) -> int:
    """The agent as it runs in its Deployment: it dials poolers at the IPs of the pods its passes list
    (podaddress.PodAddresses), so no cluster DNS is needed here either. A leading
    `--crash-before EFFECT` makes it SIGKILL itself before that side effect (see restart_agent)."""
    from multigres_pools import logs
    from multigres_pools.agent import __main__ as agent_main

    hooks: dict[str, Any] = {}
    if argv[:1] == ["--crash-before"]:
        hooks["before_effect"], argv = _crash_before(argv[1]), argv[2:]
    logs.setup(agent_main.parser().parse_args(argv).log_level)
    agent_main.build(argv, **hooks).run()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["agent"]:
        sys.exit(_agent_main(sys.argv[2:]))
    sys.exit("usage: python -m multigres_pools.playground.multigres_stack agent <agent args>")
