"""A real Kubernetes node on this machine: containerd (CRI) + runc + Debian's CNI plugins, the
kubelet, kube-scheduler, kube-proxy (iptables), CoreDNS, kube-router's NetworkPolicy controller and
local-path-provisioner, all as root host processes beside the harness's API server.

    net = claim()                                # the machine's one real node: lock, bridge, sysctls
    cluster = Cluster(node=net.cluster_network()).start()
    node = RealNode(net, cluster).start()        # Ready, images imported, add-ons answering
    ...
    node.stop(); cluster.stop(); net.release()

Only one real node runs per machine (kube-proxy's and kube-router's iptables chains are global):
`claim()` takes a machine-wide lock and says who holds it. A run that died leaves state behind that
the next `claim()` removes first (sweep.py). Everything listens on 127.0.0.1 or the bridge address.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ...images import catalog
from ...images.build import Built, build
from ...paths import collection_root
from .. import node_binaries, podnet, ports
from ..binaries import cache_root
from ..cluster import SERVICE_CIDR, Cluster, NodeNetwork, http_ok, spawn, stop_process
from ..containerd import kill_shims
from . import config, preflight, sweep
from .config import Layout, Ports
from .install import kubectl

STATE_ROOT = sweep.STATE_ROOT
# The images a node runs: the sandbox, the provisioner's helper, and what the install bundle and
# pool pods name. Imported once into the kept containerd root, again only when one was rebuilt.
NODE_IMAGES = ("pause", "node-helper", "pools", "multigres", "pgctld")
START_TIMEOUT_S = 120


class NodeStartError(RuntimeError):
    """A node component did not come up; the message names it, quotes its log and says what to do."""

    def __init__(self, component: str, problem: str, log: Path | None = None, advice: str = "") -> None:
        tail = ""
        if log is not None and log.exists():
            tail = "\n  " + "\n  ".join(log.read_text(errors="replace").splitlines()[-15:])
        super().__init__(f"real node: {component} {problem}{tail}" + (f"\n  what to do: {advice}" if advice else ""))
        self.component = component


def kept_root() -> Path:
    return cache_root() / "realnode" / "containerd"


@dataclass
class NodeNet:
    """The machine-wide part of a node, claimed before the cluster starts (the API server binds to
    the bridge address): the lock, the bridge and its subnet, the sysctls the node needs."""

    lock: IO[str]
    bridge: podnet.Bridge
    state: Path
    sysctls_before: dict[str, str]

    def cluster_network(self) -> NodeNetwork:
        return NodeNetwork(self.bridge.host_ip, str(self.bridge.subnet))

    def release(self) -> None:
        """Remove everything the node made and give the machine's node back; safe to call twice."""
        if self.lock.closed:
            return
        sweep.clean(self.state, self.bridge.name, self.sysctls_before)
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lock.close()


# Pods reach Services through DNAT on the host (forwarding) and kube-router filters bridged traffic
# between pods (br_netfilter).
SYSCTLS = {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"}


def claim() -> NodeNet:
    """Take the machine's real-node lock (clearing what a dead run left), make the bridge, set sysctls."""
    missing = preflight.problems()
    if missing:
        raise NodeStartError("preflight", "failed: " + "; ".join(missing),
                             advice="run `make setup` as root (it installs the Debian packages)")
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    lock = (STATE_ROOT / "lock").open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        raise NodeStartError("claim", f"failed: a real node already runs on this machine ({holder})",
                             advice="stop it (`multigres-pools localstack down`) or wait for its run to end") from None
    try:
        sweep.after_dead_run(STATE_ROOT)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}, since {time.strftime('%H:%M:%S')}\n")
        lock.flush()
        bridge = podnet.create_bridge(podnet.new_instance_id())
        state = STATE_ROOT / bridge.instance
        state.mkdir(parents=True)
        before = {key: sweep.sysctl(key) for key in SYSCTLS}
        sweep.record(STATE_ROOT, {"state": str(state), "bridge": bridge.name, "sysctls": before})
        for key, value in SYSCTLS.items():
            sweep.sysctl(key, value)
        return NodeNet(lock, bridge, state, before)
    except BaseException:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
        raise


@dataclass
class RealNode:
    net: NodeNet
    cluster: Cluster
    progress: Any = print
    images: dict[str, Built] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        p = self.cluster.pki
        self.layout = Layout(
            state=self.net.state, containerd_root=kept_root(), bridge=self.net.bridge.name,
            subnet=self.net.bridge.subnet, ports=Ports(*ports.free_ports(7)), kubeconfig=self.cluster.kubeconfig,
            ca_cert=p.ca_cert, admin_cert=p.admin_cert, admin_key=p.admin_key,
            pause_image=catalog.PAUSE_IMAGE, helper_image=catalog.NODE_HELPER_IMAGE)

    @property
    def host_ip(self) -> str:
        return self.layout.host_ip

    def log(self, component: str) -> Path:
        return self.layout.state / f"{component}.log"

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> RealNode:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        paths = node_binaries.resolve()
        self.images = {b.name: b for b in build(NODE_IMAGES, collection_root(), progress=self.progress)}
        self._write_configs()
        self._step("containerd", self._start_containerd)
        self._step("images", self._import_images)
        self._step("kubelet", lambda: self._start_kubelet(paths["kubelet"]))
        self._spawn("kube-scheduler", [
            str(paths["kube-scheduler"]), f"--kubeconfig={self.layout.kubeconfig}",
            f"--authentication-kubeconfig={self.layout.kubeconfig}",
            f"--authorization-kubeconfig={self.layout.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.layout.ports.scheduler}", "--leader-elect=false"])
        self._spawn("kube-proxy", [str(paths["kube-proxy"]), f"--config={self.layout.state / 'kube-proxy.yaml'}"])
        self._spawn("coredns", [str(paths["coredns"]), "-conf", str(self.layout.state / "Corefile")])
        # Its health port would listen on every interface: off; _wait_addons looks for its chains instead.
        self._spawn("kube-router", [
            str(paths["kube-router"]), f"--kubeconfig={self.layout.kubeconfig}",
            f"--hostname-override={config.NODE_NAME}", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
            "--health-port=0", "--metrics-port=0", "--iptables-sync-period=5s"])
        self._start_provisioner(paths["local-path-provisioner"])
        self._step("node add-ons", self._wait_addons)

    def stop(self) -> None:
        """Every process, then every container, mount, netns and rule the node made (sweep.clean, at
        release); the kept containerd root keeps only images."""
        for name in reversed(list(self.processes)):
            if name != "containerd":
                stop_process(self.processes[name], grace=5)
        sweep.remove_containers(self.layout.containerd_socket)
        stop_process(self.processes.get("containerd"), grace=10)
        self.processes.clear()
        kill_shims(str(self.layout.containerd_socket))

    def kill_container(self, namespace: str, pod: str, container: str) -> None:
        """SIGKILL a container's process through containerd, as an OOM kill or a crash would end it."""
        from kubernetes import client

        status = client.CoreV1Api(self.cluster.api_client()).read_namespaced_pod(pod, namespace).status
        ids = {c.name: c.container_id for c in (status.container_statuses if status else None) or []}
        found = ids.get(container)
        if not found:
            raise LookupError(f"pod {namespace}/{pod} has no running container {container!r} ({sorted(ids)})")
        self._ctr("tasks", "kill", "--signal", "SIGKILL", found.split("://", 1)[1])

    # --- pieces --------------------------------------------------------------------------------------
    def _step(self, what: str, run: Any) -> None:
        started = time.monotonic()
        run()
        self.progress(f"real node: {what} up in {time.monotonic() - started:.1f}s")

    def _wait(self, name: str, process: subprocess.Popen[bytes], ready: Any, what: str) -> None:
        try:
            ports.wait_bound(process, ready, START_TIMEOUT_S, name, self.log(name), 0)
        except RuntimeError as exc:
            problem = "exited" if process.poll() is not None else f"did not come up within {START_TIMEOUT_S}s"
            raise NodeStartError(name, f"{problem} {what}", self.log(name),
                                 f"read {self.log(name)}; the line above names the cause") from exc

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        process = spawn(argv, self.log(name))
        self.processes[name] = process
        return process

    def _write_configs(self) -> None:
        layout = self.layout
        for folder in (layout.cni_conf_dir, layout.kubelet_root, layout.volumes, layout.containerd_root,
                       layout.state / "containerd"):
            folder.mkdir(parents=True, exist_ok=True)
        (layout.state / "containerd.toml").write_text(config.containerd_toml(layout))
        (layout.cni_conf_dir / "10-multigres-pools.conflist").write_text(config.to_text(config.cni_conflist(layout)))
        (layout.state / "kubelet.yaml").write_text(config.to_text(config.kubelet_config(layout)))
        (layout.state / "kube-proxy.yaml").write_text(config.to_text(config.kube_proxy_config(layout)))
        (layout.state / "Corefile").write_text(config.corefile(layout))
        (layout.state / "resolv.conf").write_text("")  # no upstream resolver: nothing outside is reachable
        (layout.state / "provisioner.json").write_text(config.to_text(config.provisioner_config(layout)))

    def _start_containerd(self) -> None:
        process = self._spawn("containerd", ["containerd", "--config", str(self.layout.state / "containerd.toml")])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise NodeStartError("containerd", f"exited {process.returncode} at start", self.log("containerd"),
                                     "check that no other containerd uses its root (`ps -ef | grep containerd`)")
            if self._ctr("version", check=False).returncode == 0:
                sweep.remove_containers(self.layout.containerd_socket)  # what a dead run's pods left
                return
            time.sleep(0.2)
        raise NodeStartError("containerd", "did not answer within 30s", self.log("containerd"))

    def _ctr(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["ctr", "--address", str(self.layout.containerd_socket), "--namespace", "k8s.io", *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise NodeStartError("containerd", f"refused `ctr {' '.join(args)}`: {done.stderr.strip()}",
                                 self.log("containerd"))
        return done

    def _import_images(self) -> None:
        record = self.layout.containerd_root / "imported.json"
        imported: dict[str, str] = json.loads(record.read_text()) if record.exists() else {}
        present = set(self._ctr("images", "list", "-q").stdout.split())
        for item in self.images.values():
            if imported.get(item.ref) == item.key and item.ref in present:
                continue
            self._ctr("images", "import", "--no-unpack=false", item.archive)
            imported[item.ref] = item.key
            record.write_text(json.dumps(imported, indent=1, sort_keys=True))
            self.progress(f"real node: imported {item.ref}")

    def _start_kubelet(self, binary: Path) -> None:
        layout = self.layout
        sweep.make_cgroups()
        process = self._spawn("kubelet", [
            str(binary), f"--config={layout.state / 'kubelet.yaml'}", f"--kubeconfig={layout.kubeconfig}",
            f"--root-dir={layout.kubelet_root}", f"--hostname-override={config.NODE_NAME}",
            f"--node-ip={layout.host_ip}", "--v=1"])
        self._wait("kubelet", process, self._node_ready, "(until its Node is Ready with a pod CIDR)")

    def _node(self) -> dict[str, Any] | None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        try:
            node = client.CoreV1Api(self.cluster.api_client()).read_node(config.NODE_NAME)
        except ApiException:
            return None
        return dict(node.to_dict())

    def _node_ready(self) -> bool:
        node = self._node()
        if node is None:
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        return ready and bool((node.get("spec") or {}).get("pod_cidr"))

    def _start_provisioner(self, binary: Path) -> None:
        manifests = self.layout.state / "provisioner-objects.json"
        manifests.write_text(config.to_text({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": config.PROVISIONER_NAMESPACE}},
            config.storage_class(), config.provisioner_configmap()]}))
        kubectl(self.layout.kubeconfig, "apply", "--server-side", "-f", str(manifests))
        helper = self.layout.state / "helper-pod.yaml"
        helper.write_text(config.to_text(config.provisioner_helper_pod(self.layout)))
        self._spawn("local-path-provisioner", [
            str(binary), "start", f"--config={self.layout.state / 'provisioner.json'}",
            f"--namespace={config.PROVISIONER_NAMESPACE}", f"--provisioner-name={config.PROVISIONER_NAME}",
            f"--helper-image={self.layout.helper_image}", f"--helper-pod-file={helper}",
            f"--configmap-name={config.PROVISIONER_CONFIGMAP}", f"--kubeconfig={self.layout.kubeconfig}",
            "--service-account-name=default"])

    def _wait_addons(self) -> None:
        checks = {
            "kube-scheduler": f"https://127.0.0.1:{self.layout.ports.scheduler}/healthz",
            "kube-proxy": f"http://127.0.0.1:{self.layout.ports.proxy_healthz}/healthz",
            "coredns": f"http://127.0.0.1:{self.layout.ports.dns_ready}/ready",
        }
        import ssl

        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        for name, url in checks.items():
            self._wait(name, self.processes[name], lambda url=url: http_ok(url, insecure), f"(until {url} answers)")
        self._wait("kube-router", self.processes["kube-router"], _router_chains, "(until its iptables chains exist)")
        if self.processes["local-path-provisioner"].poll() is not None:
            raise NodeStartError("local-path-provisioner", "exited at start", self.log("local-path-provisioner"))


def _router_chains() -> bool:
    """kube-router's NetworkPolicy controller has made its chains (and hooked them into FORWARD)."""
    done = subprocess.run(["iptables", "-S", "KUBE-ROUTER-FORWARD"], capture_output=True, check=False)
    return done.returncode == 0
