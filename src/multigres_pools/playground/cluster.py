"""A real, local Kubernetes control plane for tests and the demo.

Starts on 127.0.0.1 with free ports (started again on other ports when one was taken meanwhile,
ports.py): etcd for the API server, kube-apiserver, kube-controller-manager
(garbage collector, disruption, namespace and service-account controllers, plus the deployment and
replicaset controllers with `workload_controllers=True`; no scheduler, no kubelet) and a second etcd
for the Multigres topology. Everything runs from a private temporary
directory and is stopped and removed by `stop()`.

Standalone use (Molecule, manual poking):
    python -m multigres_pools.playground.cluster up --env-file /tmp/mgp.env   # prints KUBECONFIG=..., TOPO_ETCD=...
    python -m multigres_pools.playground.cluster up --workloads --env-file /tmp/mgp.env   # + Deployments
    python -m multigres_pools.playground.cluster down --env-file /tmp/mgp.env
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import binaries, kubeclient, pki, ports, reaper

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# No scheduler, no kubelet, no volume binder: those are played by src/multigres_pools/playground/kubelet.py.
CONTROLLERS = ("garbage-collector-controller", "disruption-controller", "namespace-controller",
               "serviceaccount-controller", "persistentvolumeclaim-protection-controller",
               "persistentvolume-protection-controller")
# Deployments become ReplicaSets and pods only with these; a kubelet (process_kubelet.py) then runs them.
WORKLOAD_CONTROLLERS = ("deployment-controller", "replicaset-controller")
# What a real kubelet's cluster needs besides (realnode/): Services get endpoints (kube-proxy, CoreDNS),
# PVCs get provisioned and bound, the node gets its pod CIDR (kube-router), pods get kube-root-ca.crt.
NODE_CONTROLLERS = ("endpoints-controller", "endpointslice-controller", "persistentvolume-binder-controller",
                    "node-ipam-controller", "root-ca-certificate-publisher-controller",
                    "pod-garbage-collector-controller", "ephemeral-volume-controller",
                    "node-lifecycle-controller")  # lifts the not-ready taint a kubelet registers with
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of SERVICE_CIDR
SERVICE_CIDR = "10.96.0.0/20"


free_port = ports.free_port  # where tests and the playground have always imported it from


@dataclass
class Etcd:
    """One etcd member on loopback; `endpoint` is its client URL. Ports left at 0 are picked, and
    picked again if its first start finds one taken; given ports, and the ports of an etcd that has
    served once (a restart on the same data), are kept. With `tls`, clients speak HTTPS and must
    present a certificate of its CA (the admin one does); peers stay on loopback HTTP."""

    binary: Path
    data_dir: Path
    log: Path
    port: int = 0
    peer_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    tls: pki.Pki | None = None
    _picked: bool = field(default=False, init=False, repr=False)
    _offset: int = field(default=0, init=False, repr=False)

    host = "127.0.0.1"

    def __post_init__(self) -> None:
        self._picked = not (self.port or self.peer_port)
        if self._picked:
            self.port, self.peer_port = ports.free_ports(2)

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def start(self) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [str(self.binary), "--name", "default", "--data-dir", str(self.data_dir),
                "--listen-client-urls", self.endpoint, "--advertise-client-urls", self.endpoint,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"default={peer}", "--log-level", "warn"]
        if self.tls:
            args += ["--cert-file", str(self.tls.serving_cert), "--key-file", str(self.tls.serving_key),
                     "--trusted-ca-file", str(self.tls.ca_cert), "--client-cert-auth"]
        if _etcd_supports_no_fsync(self.binary):
            args.append("--unsafe-no-fsync")  # test data is throw-away; fsync dominates latency
        self._offset = ports.log_size(self.log)
        self.process = spawn(args, self.log)

    def wait_ready(self, timeout: float = 30) -> None:
        """Until /health answers; a start that hit a taken port is repeated on new ports (if picked)."""
        context = None
        if self.tls:
            context = ssl.create_default_context(cafile=str(self.tls.ca_cert))
            context.load_cert_chain(self.tls.admin_cert, self.tls.admin_key)

        def attempt(n: int) -> None:
            if n:
                if not self._picked:
                    raise RuntimeError(f"etcd on {self.endpoint}: its port is taken, and it keeps its ports "
                                       "(given, or served from before)")
                shutil.rmtree(self.data_dir, ignore_errors=True)  # nothing of the failed start is kept
                self.port, self.peer_port = ports.free_ports(2)
                self.start()
            assert self.process is not None, "start() first"
            ports.wait_bound(self.process, lambda: http_ok(f"{self.endpoint}/health", context), timeout,
                             f"etcd on {self.endpoint}", self.log, self._offset)

        ports.start_with_retries(attempt, "etcd")
        self._picked = False  # served once: a restart keeps its ports and its data

    def stop(self) -> None:
        stop_process(self.process)

    def restart(self, down: float = 0.0) -> None:
        """SIGKILL it (a crash), leave it down `down` seconds, start it again on the same ports and data
        directory: its clients keep their endpoint and reconnect, and no committed key is lost."""
        _kill(self.process)
        time.sleep(down)
        self.start()
        self.wait_ready()


def _etcd_supports_no_fsync(binary: Path) -> bool:
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=False)
    return "--unsafe-no-fsync" in out.stdout + out.stderr


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as handle:
        # A new session so a Ctrl-C in the parent terminal does not race our own orderly shutdown, and
        # one process group to reap if this run is killed (reaper.py).
        popen = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    reaper.spawned(popen, args)
    return popen


def http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def stop_process(process: subprocess.Popen[bytes] | None, grace: float = 10) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _kill(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait(10)


def _kubeconfig(server: str, p: pki.Pki) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "harness",
        "clusters": [{"name": "harness", "cluster": {"server": server, "certificate-authority": str(p.ca_cert)}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(p.admin_cert),
                                              "client-key": str(p.admin_key)}}],
        "contexts": [{"name": "harness", "context": {"cluster": "harness", "user": "admin"}}],
    }, indent=2)


@dataclass(frozen=True)
class NodeNetwork:
    """A real node's network (realnode/): the API server binds to its bridge address, so pods reach it
    through the `kubernetes` Service; the controller-manager gives the node `pod_cidr`."""

    host: str
    pod_cidr: str


class Cluster:
    """kube-apiserver + kube-controller-manager + etcd, plus a separate topology etcd."""

    def __init__(self, workdir: Path | None = None, *, workload_controllers: bool = False,
                 node: NodeNetwork | None = None) -> None:
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="mgp-cluster-"))
        self.node = node
        self.host = node.host if node else "127.0.0.1"
        self.controllers = (CONTROLLERS + (WORKLOAD_CONTROLLERS if workload_controllers or node else ())
                            + (NODE_CONTROLLERS if node else ()))
        self.paths = binaries.resolve()
        self.version = binaries.KUBE_VERSION
        self.pki = pki.generate(self.workdir / "pki", (node.host, KUBERNETES_SERVICE_IP) if node else ())
        self.api_etcd = Etcd(self.paths["etcd"], self.workdir / "etcd-api", self.workdir / "etcd-api.log")
        self.topo_etcd = Etcd(self.paths["etcd"], self.workdir / "etcd-topo", self.workdir / "etcd-topo.log")
        self.port = free_port()
        self.kubeconfig = self.workdir / "kubeconfig"
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._controller_manager: subprocess.Popen[bytes] | None = None
        self._cm_log = self.workdir / "kube-controller-manager.log"
        self._cm_offset = 0

    @property
    def server(self) -> str:
        return f"https://{self.host}:{self.port}"

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Cluster:
        print(f"harness: Kubernetes {self.version} (etcd {binaries.ETCD_VERSION}) in {self.workdir}", flush=True)
        try:
            self.api_etcd.start()
            self.topo_etcd.start()
            self.api_etcd.wait_ready()
            self._start_apiserver()
            self.kubeconfig.write_text(_kubeconfig(self.server, self.pki))
            self._start_controller_manager()
            self.topo_etcd.wait_ready()
            self._wait_controllers()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process(self._controller_manager)
        # kube-apiserver stops listening at once but then waits for its open requests (watches of clients
        # that outlive it, in the test process) until the grace runs out: 10 s of every teardown. Its
        # state is in etcd and removed below, so it is not waited for.
        stop_process(self._apiserver, grace=2)
        for etcd in (self.topo_etcd, self.api_etcd):
            stop_process(etcd.process)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def restart_apiserver(self, down: float = 0.0) -> None:
        """SIGKILL kube-apiserver (a crash), leave it down `down` seconds, start it again on the same port,
        etcd and certificates: every client keeps its kubeconfig and reconnects."""
        _kill(self._apiserver)
        time.sleep(down)
        self._start_apiserver()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------------
    def api_client(self) -> ApiClient:
        return kubeclient.api_client(self.kubeconfig)

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return ctx

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.kubeconfig), "TOPO_ETCD": self.topo_etcd.endpoint,
                "HARNESS_WORKDIR": str(self.workdir)}

    # -- internals ---------------------------------------------------------------------------------
    def _start_apiserver(self) -> None:
        p = self.pki
        log = self.workdir / "kube-apiserver.log"
        args = [
            str(self.paths["kube-apiserver"]),
            f"--etcd-servers={self.api_etcd.endpoint}",
            f"--bind-address={self.host}", f"--advertise-address={self.host}",
            f"--tls-cert-file={p.serving_cert}", f"--tls-private-key-file={p.serving_key}",
            f"--client-ca-file={p.ca_cert}",
            f"--service-account-key-file={p.sa_public}", f"--service-account-signing-key-file={p.sa_private}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            # Room for a fleet: every shard has a ClusterIP Service (bench.operator_loop makes 550).
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            # As a hardened cluster runs it: a blocking ownerReference needs the owner's finalizers
            # (state/ownership.py).
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            "--cert-dir", str(self.workdir / "apiserver-certs"),
        ]
        if self.node:
            # logs, exec and port-forward reach the kubelet with the admin certificate (it trusts our CA).
            args += [f"--kubelet-client-certificate={p.admin_cert}", f"--kubelet-client-key={p.admin_key}",
                     "--kubelet-preferred-address-types=InternalIP"]  # the node's name is in no DNS
        else:
            # The ServiceAccount admission plugin rejects pods until the controller has created the
            # namespace's default ServiceAccount; tests create pods in brand-new namespaces. A real
            # node's pods need it: it mounts their API token.
            args.append("--disable-admission-plugins=ServiceAccount")
        context = self.ssl_context()

        def attempt(n: int) -> None:
            if n:
                self.port = free_port()
            port_args = [*args, f"--secure-port={self.port}"]
            offset = ports.log_size(log)
            self._apiserver = spawn(port_args, log)
            ports.wait_bound(self._apiserver, lambda: http_ok(f"{self.server}/readyz", context), 120,
                             f"kube-apiserver on {self.server}", log, offset)

        ports.start_with_retries(attempt, "kube-apiserver")

    def _start_controller_manager(self) -> None:
        args = [
            str(self.paths["kube-controller-manager"]),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}",  # its own port: nobody dials it
            f"--controllers={','.join(self.controllers)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--root-ca-file={self.pki.ca_cert}",
        ]
        if self.node:
            args += ["--allocate-node-cidrs=true", f"--cluster-cidr={self.node.pod_cidr}",
                     f"--node-cidr-mask-size={self.node.pod_cidr.rsplit('/', 1)[1]}",
                     f"--service-cluster-ip-range={SERVICE_CIDR}"]
        self._cm_offset = ports.log_size(self._cm_log)
        self._controller_manager = spawn(args, self._cm_log)

    def _wait_controllers(self) -> None:
        """The controller-manager is up once its service-account controller made `default/default`; one
        that exits on a taken port is started again on another."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.api_client())

        def has_default_sa() -> bool:
            try:
                core.read_namespaced_service_account("default", "default")
                return True
            except ApiException:
                return False

        def attempt(n: int) -> None:
            if n:
                self._start_controller_manager()  # picks a new port
            assert self._controller_manager is not None
            ports.wait_bound(self._controller_manager, has_default_sa, 120, "kube-controller-manager",
                             self._cm_log, self._cm_offset)

        ports.start_with_retries(attempt, "kube-controller-manager")


def write_env_file(path: Path, env: dict[str, str]) -> None:
    """Shell syntax, so `source` works (HARNESS_PIDS holds spaces)."""
    path.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()))


def read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k: (shlex.split(v) or [""])[0] for k, v in pairs}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("up", "down"))
    parser.add_argument("--env-file", required=True, type=Path,
                        help="where `up` writes KUBECONFIG/TOPO_ETCD/HARNESS_PIDS and `down` reads them")
    parser.add_argument("--workloads", action="store_true",
                        help="also run the deployment and replicaset controllers")
    args = parser.parse_args(argv)
    if args.command == "up":
        cluster = Cluster(workload_controllers=args.workloads).start()
        procs = [cluster._controller_manager, cluster._apiserver, cluster.topo_etcd.process,
                 cluster.api_etcd.process]
        env = cluster.env() | {"HARNESS_PIDS": " ".join(str(p.pid) for p in procs if p)}
        write_env_file(args.env_file, env)
        print(args.env_file.read_text(), end="")
        return 0
    env = read_env_file(args.env_file)
    pids = [int(pid) for pid in env.get("HARNESS_PIDS", "").split()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.1)
    shutil.rmtree(env.get("HARNESS_WORKDIR", ""), ignore_errors=True)
    args.env_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
