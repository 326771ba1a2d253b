"""PLAYGROUND — a kubelet that runs the pods of our real kube-apiserver as local processes, so real
Multigres v0.1.0 + PostgreSQL 17 pool pods can run on this machine (needs root: network namespaces,
mounts; the containers themselves always run as an unprivileged user).

It is its own scheduler too (none runs in the harness): pods without a nodeName are bound to its
Node, which it registers Ready. Each pod gets a network namespace on the instance's bridge (see
podnet.py), its volumes (podfs.py), a hosts file playing cluster DNS (poddns.py), and its containers
started through podexec.py in private mount/UTS/PID namespaces. Images are not pulled: the caller's
image table maps each image reference to local executables.

    kubelet = ProcessKubelet(api_client, {"toy:1": ImageSpec(path_dirs=["/usr/bin"])}, user="nobody")
    kubelet.start()            # kubelet.host_ip: the bridge address, reachable from every pod
    ...                        # create pods; they run; kubelet.logs(ns, pod, container)
    kubelet.stop()             # kills everything, removes every netns/veth/bridge/dir it made

What it cannot honour is reported, not ignored: the container waits with a reason (ErrImagePull,
CreateContainerConfigError, ContainerCreating) and a message naming the field, and an Event is
recorded. Not modelled: resource limits, runAsUser other than 0 (containers always run as `user`),
service links env vars, image pull policies, pod (anti-)affinity.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import json
import logging
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from . import claimfs, poddns, podnet, slowdisk
from .kubelet import FakeKubelet, now, record_event
from .podenv import ImageSpec, Lookup
from .podfs import Reader, text_data
from .podworker import PodWorker

__all__ = ["ImageSpec", "ProcessKubelet", "sweep", "toolchain_images"]

log = logging.getLogger(__name__)

WATCH_SECONDS = 30
DEFAULT_BACKOFF = (10.0, 300.0)  # a kubelet's crash-loop delay (first, max), in s: 10 s doubling to 5 min


def sweep(prefix: str = podnet.PREFIX) -> list[str]:
    """What kubelet instances (and fault runs) whose owner died left: network namespaces, links, claim
    filesystems, slow-disk cgroups."""
    return (podnet.sweep(prefix) + [f"mount/{point}" for point in claimfs.sweep(podnet.owner_alive)]
            + [f"cgroup/{group}" for group in slowdisk.sweep()])

_LIVE: set[ProcessKubelet] = set()


class ProcessKubelet:
    """Runs the pods bound to its Node (binding unscheduled ones) as local processes.

    api_client: a `kubernetes` ApiClient for the cluster; images: image reference -> ImageSpec;
    user: the unprivileged account every container runs as; namespace: watch only this one (None:
    all); node_name: default `process-<instance id>`; workdir: PVC data, pod dirs and logs (default: a
    temporary dir removed by stop(); a given one keeps `pvc/` across runs); node_labels: extra Node
    labels (nodeSelector is honoured); backoff: (first, max) crash-loop delay in seconds;
    sized_claims: give each claim a filesystem of its own sized to its request (claimfs: it can fill
    up; its data lives in memory until stop()).
    """

    def __init__(self, api_client: client.ApiClient, images: Mapping[str, ImageSpec], user: str, *,
                 namespace: str | None = None, node_name: str | None = None, workdir: Path | None = None,
                 node_labels: Mapping[str, str] | None = None, backoff: tuple[float, float] = DEFAULT_BACKOFF,
                 cluster_domain: str = layout.CLUSTER_DOMAIN, sized_claims: bool = False) -> None:
        try:
            account = pwd.getpwnam(user)
        except KeyError:
            raise ValueError(f"user: no account named {user!r} on this machine") from None
        if account.pw_uid == 0:
            raise ValueError(f"user: {user!r} is root; containers must run as an unprivileged user")
        missing = [t for t in ("ip", "nsenter", "unshare") if shutil.which(t) is None]
        if missing:
            raise RuntimeError(f"the process kubelet needs {', '.join(missing)} (iproute2, util-linux)")
        self.tools = {t: str(shutil.which(t)) for t in ("nsenter", "unshare")}
        self.images = dict(images)
        self.user, self.uid, self.gid = user, account.pw_uid, account.pw_gid
        self.namespace = namespace
        self.instance = podnet.new_instance_id()
        self.node_name = node_name or f"process-{self.instance}"
        self.node_labels = {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux",
                            **(node_labels or {})}
        self.backoff = backoff
        self.cluster_domain = cluster_domain
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"mgp-kubelet-{self.instance}-"))
        config = copy.copy(api_client.configuration)
        config.connection_pool_maxsize = 64  # one status writer per pod plus the watches
        self.api = client.ApiClient(config)
        self.fake = FakeKubelet(self.api)
        self.core = self.fake.core
        self.bridge: podnet.Bridge | None = None
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._dns_dirty = threading.Event()
        self._pods: dict[tuple[str, str], Manifest] = {}
        self._services: dict[tuple[str, str], Manifest] = {}
        self._workers: dict[str, PodWorker] = {}
        self._ips: set[int] = set()
        self._last_ip = 1  # the bridge has .1; pods start at .2
        self._pids: set[int] = set()
        self._unschedulable: set[str] = set()
        self._threads: list[threading.Thread] = []
        self.env_lookup = Lookup(lambda ns, n: text_data(self._get("config_map", ns, n), secret=False),
                                 lambda ns, n: text_data(self._get("secret", ns, n), secret=True))
        self.volume_reader = Reader(lambda ns, n: self._get("config_map", ns, n),
                                    lambda ns, n: self._get("secret", ns, n),
                                    lambda ns, n: self._get("persistent_volume_claim", ns, n),
                                    self.fake.bind_pvc, self._claim_filesystem if sized_claims else None)

    def _claim_filesystem(self, path: Path, pvc: Manifest) -> None:
        size = claimfs.requested_bytes(pvc)
        if claimfs.mount_sized(path, size, self.uid, self.gid, self.instance):
            log.info("claim %s: a %s-byte filesystem of its own", path.name, size)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ProcessKubelet:
        (self.workdir / "pods").mkdir(parents=True, exist_ok=True)
        self.bridge = podnet.create_bridge(self.instance)
        _LIVE.add(self)
        _install_cleanup_hooks()
        try:
            self._register_node()
        except BaseException:
            self.stop()
            raise
        for target, name in ((self._watch_pods, "pods"), (self._watch_services, "services"), (self._dns_loop, "dns")):
            thread = threading.Thread(target=target, name=f"kubelet-{self.instance}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, grace: float = 5.0) -> None:
        """Stops every pod (SIGTERM, SIGKILL after `grace`) without touching their API objects, then
        removes every netns, veth, the bridge, the Node and what it made under the workdir."""
        if self._stopping.is_set() and self not in _LIVE:
            return
        self._stopping.set()
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.request_stop(grace)
        for worker in workers:
            worker.finished.wait(grace + 15)
        self._emergency_cleanup()
        with contextlib.suppress(Exception):  # best effort: the control plane may already be gone
            self.core.delete_node(self.node_name, _request_timeout=5)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            shutil.rmtree(self.workdir / "pods", ignore_errors=True)
        _LIVE.discard(self)

    def _emergency_cleanup(self) -> None:
        """Lock-free, so a signal handler may call it: kill every process group, remove the network."""
        for pid in list(self._pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        for worker in list(self._workers.values()):
            if worker.net is not None:
                podnet.delete_pod_net(worker.net)
        if self.bridge is not None:
            podnet.delete_bridge(self.bridge)
        for netns in podnet.netns_names():  # pods whose worker had not recorded its netns yet
            if netns.startswith(f"{self.instance}-"):
                podnet.delete_pod_net(podnet.PodNet(netns, "", ""))
        claimfs.unmount_instance(self.instance)  # after the kill: nothing writes to them any more

    def __enter__(self) -> ProcessKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- public helpers ----------------------------------------------------------------------------
    @property
    def host_ip(self) -> str:
        """The bridge's address in the root namespace: reachable from every pod (bind a topology etcd here)."""
        if self.bridge is None:
            raise RuntimeError("the process kubelet is not started")
        return self.bridge.host_ip

    @property
    def subnet(self) -> str:
        return str(self.bridge.subnet) if self.bridge else ""

    def logs(self, namespace: str, pod: str, container: str, previous: bool = False) -> str:
        """The container's output of its current run (`previous`: the run before), of the newest pod by that name."""
        dirs = sorted((self.workdir / "logs").glob(f"{namespace}_{pod}_*"), key=lambda d: d.stat().st_mtime)
        if not dirs:
            raise FileNotFoundError(f"no logs for pod {namespace}/{pod}")
        runs = sorted((dirs[-1] / container).glob("*.log"), key=lambda f: int(f.stem))
        if len(runs) < (2 if previous else 1):
            raise FileNotFoundError(f"no {'previous ' if previous else ''}logs for {namespace}/{pod} {container}")
        return runs[-2 if previous else -1].read_text(errors="replace")

    def exec(self, namespace: str, pod: str, container: str, command: Sequence[str],
             timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """`kubectl exec`: the command inside the running container, as the run-as user."""
        return self._worker(namespace, pod).exec_in(self._worker(namespace, pod).container(container), command, timeout)

    def pvc_path(self, namespace: str, claim: str) -> Path:
        """Where the claim's data lives on the host (it outlives pods, and stop() keeps it for a given workdir)."""
        return self.workdir / "pvc" / namespace / claim

    def pod_ip(self, namespace: str, pod: str) -> str | None:
        return self._worker(namespace, pod).ip

    def resolve(self, name: str) -> list[str]:
        """What cluster DNS would answer for a Service or pod name, for clients in the root namespace."""
        with self._lock:
            pods, services = list(self._pods.values()), list(self._services.values())
        return poddns.resolve(name, pods, services, self.cluster_domain)

    def missing_image_message(self, ref: str) -> str:
        repo = _repository(ref)
        same = sorted(r for r in self.images if _repository(r) == repo)
        if same:
            return (f"image {ref!r} is not available on this machine: only {', '.join(same)} "
                    f"{'is' if len(same) == 1 else 'are'}")
        return f"image {ref!r} is not available on this machine: the process kubelet's image table has no such image"

    # -- used by pod workers -----------------------------------------------------------------------
    def allocate_ip(self) -> int:
        """Round robin over the subnet, as CNI's host-local IPAM does: an address freed a moment ago is
        still in other pods' neighbour (ARP) caches with the old veth's MAC, so reusing it at once
        leaves the new pod unreachable for up to a minute."""
        with self._lock:
            for step in range(253):
                index = 2 + (self._last_ip - 2 + 1 + step) % 253
                if index not in self._ips:
                    self._ips.add(index)
                    self._last_ip = index
                    return index
        raise podnet.NetError(f"no free address left in {self.subnet}")

    def release_ip(self, index: int) -> None:
        with self._lock:
            self._ips.discard(index)

    def track(self, pid: int) -> None:
        self._pids.add(pid)

    def untrack(self, pid: int) -> None:
        self._pids.discard(pid)

    def write_status(self, namespace: str, name: str, status: Manifest) -> None:
        self.fake.write_pod_status(namespace, name, status)

    def event(self, involved: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        try:
            record_event(self.core, involved, kind, reason, message, host=self.node_name)
        except Exception as err:  # an event is not worth failing a pod for
            log.debug("event %s not recorded: %s", reason, err)

    def final_delete(self, namespace: str, name: str, uid: str) -> None:
        """The kubelet's last word on a terminated pod: delete it with grace 0 (finalizers may keep it)."""
        try:
            # In the body: the API server ignores query options when a body is sent. Plain manifests
            # here and below: the client serializes them as it does its model classes.
            self.core.delete_namespaced_pod(name, namespace, body=client.V1DeleteOptions(
                grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)))
        except ApiException as err:
            if err.status not in (404, 409):
                log.warning("final delete of %s/%s failed: %s", namespace, name, err)

    def hosts_for(self, worker: PodWorker) -> str:
        with self._lock:
            pods, services = list(self._pods.values()), list(self._services.values())
        return poddns.hosts_file(worker.pod, worker.ip or "", pods, services, self.cluster_domain)

    # -- API reads ---------------------------------------------------------------------------------
    def _get(self, kind: str, namespace: str, name: str) -> Manifest | None:
        try:
            resp = getattr(self.core, f"read_namespaced_{kind}")(name, namespace, _preload_content=False)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return cast(Manifest, json.loads(resp.data))  # a read_namespaced_* answer: one object

    def _worker(self, namespace: str, pod: str) -> PodWorker:
        with self._lock:
            found = [w for w in self._workers.values()
                     if (w.namespace, w.pod_name) == (namespace, pod) and not w.finished.is_set()]
        if not found:
            raise KeyError(f"pod {namespace}/{pod} is not running on {self.node_name}")
        return found[-1]

    # -- node and scheduling -----------------------------------------------------------------------
    def _register_node(self) -> None:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name, "labels": self.node_labels}}
        try:
            self.core.create_node(body)  # type: ignore[arg-type]  # a plain manifest (final_delete)
        except ApiException as err:
            if err.status != 409:
                raise
            self.core.patch_node(self.node_name, {"metadata": {"labels": self.node_labels}})
        stamp = now()
        capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{_memory_kib()}Ki", "pods": "250"}
        self.core.patch_node_status(self.node_name, {"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "process kubelet is posting ready status",
                            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
            "addresses": [{"type": "InternalIP", "address": self.host_ip},
                          {"type": "Hostname", "address": self.node_name}],
            "capacity": capacity, "allocatable": capacity,
            "nodeInfo": {"kubeletVersion": "process-kubelet", "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "process://podexec", "machineID": "", "systemUUID": "",
                         "bootID": "", "kernelVersion": os.uname().release, "osImage": "", "kubeProxyVersion": ""},
        }})

    def _fits(self, pod: Manifest) -> str | None:
        """Why this node cannot take `pod` (nodeSelector, required node affinity), or None."""
        spec = pod.get("spec") or {}
        for key, value in (spec.get("nodeSelector") or {}).items():
            if self.node_labels.get(key) != value:
                return f"node {self.node_name} does not match nodeSelector {key}={value}"
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        if terms and not any(_term_matches(term, self.node_labels) for term in terms):
            return f"node {self.node_name} does not match the pod's required node affinity"
        return None

    def _bind(self, pod: Manifest) -> None:
        meta = pod["metadata"]
        if (pod["spec"].get("schedulerName") or "default-scheduler") != "default-scheduler":
            return
        reason = self._fits(pod)
        if reason:
            if meta["uid"] not in self._unschedulable:
                self._unschedulable.add(meta["uid"])
                self.fake.write_pod_status(meta["namespace"], meta["name"], {"conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": reason,
                     "lastTransitionTime": now()}]})
                self.event({"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                            "uid": meta["uid"]}, "Warning", "FailedScheduling", reason)
            return
        body = client.V1Binding(metadata=client.V1ObjectMeta(name=meta["name"], uid=meta["uid"]),
                                target=client.V1ObjectReference(api_version="v1", kind="Node", name=self.node_name))
        try:
            self.core.create_namespaced_pod_binding(meta["name"], meta["namespace"], body, _preload_content=False)
        except ApiException as err:
            if err.status not in (404, 409):  # gone, or bound by someone else meanwhile
                log.warning("binding %s/%s failed: %s", meta["namespace"], meta["name"], err)

    # -- watches -----------------------------------------------------------------------------------
    def _list_and_watch(self, kind: str, on_list: Any, on_event: Any) -> None:
        plural = {"pod": "pod", "service": "service"}[kind]
        if self.namespace:
            fn: Any = getattr(self.core, f"list_namespaced_{plural}")
            args: tuple[str, ...] = (self.namespace,)
        else:
            fn, args = getattr(self.core, f"list_{plural}_for_all_namespaces"), ()
        while not self._stopping.is_set():
            try:
                listed = json.loads(fn(*args, _preload_content=False).data)
                on_list(listed.get("items") or [])
                stream = watch.Watch().stream(fn, *args, resource_version=listed["metadata"]["resourceVersion"],
                                              timeout_seconds=WATCH_SECONDS, deserialize=False)
                for event in stream:
                    if self._stopping.is_set():
                        return
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        on_event(event["type"], event["object"])
            except Exception as err:  # relist after any watch failure
                if self._stopping.is_set():
                    return
                log.info("%s watch restarts after: %s", kind, err)
                self._stopping.wait(1)

    def _watch_pods(self) -> None:
        def on_list(items: list[Manifest]) -> None:
            present = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items}
            uids = {p["metadata"]["uid"] for p in items}
            with self._lock:
                vanished = [k for k in self._pods if k not in present]
                workers = [w for uid, w in self._workers.items() if uid not in uids]
            for key in vanished:
                self._pods.pop(key, None)
            for worker in workers:
                self._on_pod("DELETED", worker.pod)
            for pod in items:
                self._on_pod("MODIFIED", pod)
        self._list_and_watch("pod", on_list, self._on_pod)

    def _on_pod(self, kind: str, pod: Manifest) -> None:
        meta = pod["metadata"]
        key, uid = (meta["namespace"], meta["name"]), meta["uid"]
        self._dns_dirty.set()
        with self._lock:
            if kind == "DELETED":
                if (self._pods.get(key) or {}).get("metadata", {}).get("uid") == uid:
                    self._pods.pop(key, None)
                worker = self._workers.pop(uid, None)
                if worker is not None:
                    worker.gone()
                return
            self._pods[key] = pod
            node = pod["spec"].get("nodeName")
            worker = self._workers.get(uid)
        if not node:
            if not meta.get("deletionTimestamp"):
                self._bind(pod)
            return
        if node != self.node_name:
            return
        if worker is not None:
            worker.update(pod)
            return
        with self._lock:
            if self._stopping.is_set() or uid in self._workers:
                return
            worker = PodWorker(self, pod)
            self._workers[uid] = worker
        worker.start()

    def _watch_services(self) -> None:
        def on_list(items: list[Manifest]) -> None:
            with self._lock:
                self._services = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in items}
            self._dns_dirty.set()

        def on_event(kind: str, svc: Manifest) -> None:
            key = (svc["metadata"]["namespace"], svc["metadata"]["name"])
            with self._lock:
                if kind == "DELETED":
                    self._services.pop(key, None)
                else:
                    self._services[key] = svc
            self._dns_dirty.set()
        self._list_and_watch("service", on_list, on_event)

    def _dns_loop(self) -> None:
        """Rewrites every running pod's hosts file when pods or Services change."""
        while not self._stopping.is_set():
            if not self._dns_dirty.wait(1):
                continue
            self._dns_dirty.clear()
            with self._lock:
                workers = [w for w in self._workers.values() if w.net is not None]
            for worker in workers:
                worker.write_hosts(self.hosts_for(worker))
            self._stopping.wait(0.2)  # coalesce bursts of pod updates


MULTIGRES_IMAGE_REPOSITORIES = ("ghcr.io/multigres/multigres", "ghcr.io/multigres/pgctld")


def toolchain_images(toolchain: Any) -> dict[str, ImageSpec]:
    """The image table for a playground `toolchain.Toolchain`: Multigres v0.1.0's two images, each
    with the Multigres binaries, PostgreSQL 17 and pgBackRest (as the real pgctld image has them),
    a UTF-8 locale, and the system directories after them on PATH (pg_ctl and archive commands
    run shell commands). Commands resolve in the image's own directories and in the one holding
    `sh`, which both real images have (Debian under PostgreSQL's image, and our recipe's)."""
    from .toolchain import MULTIGRES_VERSION

    shell = os.path.dirname(shutil.which("sh") or "/bin/sh")
    dirs = [str(d) for d in dict.fromkeys((toolchain.multigres_bin, toolchain.postgres_bin,
                                           toolchain.pgbackrest.parent, shell))]
    env = {k: v for k, v in toolchain.env().items() if k in ("PATH", "LANG", "LC_ALL", "LOCPATH")}
    # Where the pgctld image has it: the pool pod's sidecar script runs it by that path.
    files = {layout.PGCTLD_BIN: str(toolchain.multigres_bin / "pgctld")}
    return {f"{repo}:{MULTIGRES_VERSION}": ImageSpec(path_dirs=dirs, env=env, files=files)
            for repo in MULTIGRES_IMAGE_REPOSITORIES}


def _term_matches(term: Manifest, labels: Mapping[str, str]) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}.get(op, False)
        if not ok:
            return False
    return not term.get("matchFields")


def _repository(ref: str) -> str:
    """`registry/name` of an image reference, without tag or digest."""
    name = ref.split("@", 1)[0]
    head, _, tail = name.rpartition("/")
    return f"{head}/{tail.split(':', 1)[0]}" if head else tail.split(":", 1)[0]


def _memory_kib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 1 << 20


_hooks_installed = False


def _cleanup_all() -> None:
    for kubelet in list(_LIVE):
        kubelet._emergency_cleanup()
        if kubelet._own_workdir:
            shutil.rmtree(kubelet.workdir, ignore_errors=True)
        _LIVE.discard(kubelet)


def _install_cleanup_hooks() -> None:
    """atexit, and SIGTERM when nobody else handles it (a killed test run must not leave netns behind)."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_cleanup_all)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        def on_term(signum: int, _frame: object) -> None:
            _cleanup_all()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        signal.signal(signal.SIGTERM, on_term)
