"""One pod's life in the process kubelet: a thread that sets up its sandbox (network namespace,
volumes, hosts file), runs init containers to completion, native sidecars and regular containers
with restarts, back-off and probes, writes the pod status the kubelet would, and on deletion stops
everything in Kubernetes order before the kubelet's final delete."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from . import podenv, podexec, probes, reaper
from .kubelet import now, pod_conditions
from .poddns import hostname as pod_hostname
from .podfs import PodVolumes, UnsupportedVolume, VolumeError
from .podnet import Bridge, NetError, PodNet, create_pod_net, delete_pod_net

if TYPE_CHECKING:
    from .process_kubelet import ProcessKubelet

log = logging.getLogger(__name__)

SYNC_RETRY_SECONDS = 2.0
TICK = 0.2
RETRY = 5.0  # seconds between attempts to fix a config, volume or sandbox problem
FORCE_DELETE_GRACE = 2.0  # what the kubelet allows containers of a pod deleted with grace 0


@dataclass
class Run:
    """One process of one container."""

    popen: subprocess.Popen[bytes]
    image: str
    started: float
    started_at: str
    env: dict[str, str]
    probers: dict[str, probes.Prober] = field(default_factory=dict)
    kill_deadline: float | None = None

    uid: int = -1

    @property
    def container_pid(self) -> int | None:
        """The host pid of the container's pid 1 (podexec's only child), once it has built its view
        and dropped to the run-as user; None before (entering it then would see the host's root)."""
        try:
            children = Path(f"/proc/{self.popen.pid}/task/{self.popen.pid}/children").read_text().split()
            if not children:
                return None
            status = Path(f"/proc/{children[0]}/status").read_text().splitlines()
        except OSError:
            return None
        uids = next((line.split()[1:] for line in status if line.startswith("Uid:")), [])
        return int(children[0]) if uids and all(u == str(self.uid) for u in uids) else None


class Container:
    def __init__(self, spec: Manifest, kind: str) -> None:
        self.spec = spec
        self.name: str = spec["name"]
        self.kind = kind  # "init", "sidecar" or "regular"
        self.run: Run | None = None
        self.starts = 0
        self.crashes = 0
        self.state: Manifest = {"waiting": {"reason": "PodInitializing" if kind == "regular" else "ContainerCreating"}}
        self.last_state: Manifest = {}
        self.started = False
        self.ready = False
        self.completed = False  # an init container that exited 0
        self.next_start = 0.0
        self.stop_restarts = False

    def status(self, image_ids: dict[str, str]) -> Manifest:
        image = self.spec.get("image", "")
        out: Manifest = {
            "name": self.name, "image": image, "imageID": image_ids.get(image, ""),
            "ready": self.ready, "restartCount": max(self.starts - 1, 0), "started": self.started,
            "state": _full_state(self.state), "lastState": _full_state(self.last_state),
        }
        if self.run is not None:
            out["containerID"] = f"process://{self.run.popen.pid}"
        elif "terminated" in self.state:
            out["containerID"] = self.state["terminated"].get("containerID", "")
        return out


def _full_state(state: Manifest) -> Manifest:
    # Explicit nulls: the status patch is a strategic merge, which would otherwise keep the old key.
    return {key: state.get(key) for key in ("waiting", "running", "terminated")} if state else {}


class PodWorker:
    def __init__(self, kubelet: ProcessKubelet, pod: Manifest) -> None:
        meta = pod["metadata"]
        self.thread = threading.Thread(target=self.run, name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.kubelet = kubelet
        self.pod = pod
        self.namespace, self.pod_name, self.uid = meta["namespace"], meta["name"], meta["uid"]
        self.dir = kubelet.workdir / "pods" / self.uid
        self.log_dir = kubelet.workdir / "logs" / f"{self.namespace}_{self.pod_name}_{self.uid}"
        spec = pod["spec"]
        self.restart_policy = spec.get("restartPolicy", "Always")
        self.containers = [Container(c, "sidecar" if c.get("restartPolicy") == "Always" else "init")
                           for c in spec.get("initContainers") or []]
        self.containers += [Container(c, "regular") for c in spec["containers"]]
        self.net: PodNet | None = None
        self.volumes: PodVolumes | None = None
        self.hosts = self.dir / "hosts"
        self.start_time = now()
        self.pod_error: tuple[str, str] | None = None  # (reason, message) blocking every container
        self.failed_init = False
        self.adopted_terminal = pod.get("status", {}).get("phase") in ("Succeeded", "Failed")
        self._wake = threading.Event()
        self._gone = False
        self._stop_grace: float | None = None
        self._published: str = ""
        self._conditions: list[Manifest] = []
        self._volumes_checked = 0.0
        self._events: set[tuple[str, str]] = set()
        self._ip_index: int | None = None
        self.finished = threading.Event()

    # -- signals from the kubelet ------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def update(self, pod: Manifest) -> None:
        self.pod = pod
        self._wake.set()

    def gone(self) -> None:
        self._gone = True
        self._wake.set()

    def request_stop(self, grace: float) -> None:
        self._stop_grace = grace
        self._wake.set()

    @property
    def ip(self) -> str | None:
        return self.net.ip if self.net else None

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._loop()
        except Exception:  # a worker must never die silently with processes running
            log.exception("pod worker %s/%s failed", self.namespace, self.pod_name)
            self._kill_all()
        finally:
            self._teardown()
            self.finished.set()

    def _loop(self) -> None:
        while True:
            if self._stop_grace is not None:
                self._terminate(self._stop_grace, publish=False)
                return
            if self._gone:
                self._terminate(FORCE_DELETE_GRACE, publish=False)
                return
            meta = self.pod["metadata"]
            if meta.get("deletionTimestamp"):
                grace = meta.get("deletionGracePeriodSeconds")
                if grace is None:
                    grace = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
                self._terminate(float(grace), publish=not self.adopted_terminal)
                self.kubelet.final_delete(self.namespace, self.pod_name, self.uid)
                return
            if not self.adopted_terminal:
                try:
                    self._sync()
                except Exception as exc:  # a host-side error must not leave the pod unattended: report, retry
                    log.exception("pod worker %s/%s: sync failed", self.namespace, self.pod_name)
                    self._event("Warning", "FailedSync", f"error syncing pod, will retry: {exc}")
                    self._wake.wait(SYNC_RETRY_SECONDS)
                self._publish()
            self._wake.wait(TICK)
            self._wake.clear()

    # -- sandbox -----------------------------------------------------------------------------------
    def _ensure_sandbox(self) -> bool:
        if self.net is not None:
            return True
        spec = self.pod["spec"]
        if spec.get("hostNetwork"):
            self._pod_problem("CreateContainerConfigError",
                              "spec.hostNetwork is not supported by the process kubelet (pods get their own netns)")
            return False
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._ip_index = self.kubelet.allocate_ip()
            # ProcessKubelet.start() made the bridge before any pod could be bound to this node.
            self.net = create_pod_net(cast(Bridge, self.kubelet.bridge), self._ip_index)
        except (NetError, OSError) as err:
            if self._ip_index is not None:
                self.kubelet.release_ip(self._ip_index)
                self._ip_index = None
            self._event("Warning", "FailedCreatePodSandBox", f"Failed to create pod sandbox: {err}")
            return False
        (self.dir / "resolv.conf").write_text(
            "# No DNS server runs in the playground: cluster names are in /etc/hosts.\noptions ndots:1\n")
        (self.dir / "hostname").write_text(self.hostname + "\n")
        self.write_hosts(self.kubelet.hosts_for(self))
        return True

    @property
    def hostname(self) -> str:
        return pod_hostname(self.pod)

    def write_hosts(self, content: str) -> None:
        """Rewritten in place: containers see this inode bind-mounted as /etc/hosts."""
        if not self.dir.is_dir():
            return
        try:
            if self.hosts.exists() and self.hosts.read_text() == content:
                return
            with self.hosts.open("a+") as handle:
                handle.seek(0)
                handle.truncate()
                handle.write(content)
        except OSError:
            pass

    def _ensure_volumes(self) -> bool:
        current = time.monotonic()
        if self.volumes is not None and current - self._volumes_checked < RETRY:
            return self.pod_error is None
        self._volumes_checked = current
        if self.volumes is None:
            self.volumes = PodVolumes(self.pod, self.dir, self.kubelet.workdir / "pvc", self.kubelet.uid,
                                      self.kubelet.gid, self.kubelet.volume_reader)
        self.volumes.pod = self.pod
        try:
            self.volumes.prepare()
        except UnsupportedVolume as err:
            self._pod_problem("CreateContainerConfigError", str(err), event="FailedMount")
            return False
        except VolumeError as err:
            self._pod_problem("ContainerCreating", str(err), event="FailedMount")
            return False
        self.pod_error = None
        return True

    def _pod_problem(self, reason: str, message: str, event: str = "Failed") -> None:
        self.pod_error = (reason, message)
        for c in self.containers:
            if c.run is None and not c.completed:
                c.state = {"waiting": {"reason": reason, "message": message}}
        self._event("Warning", event, message)

    # -- sync: start, reap, probe ------------------------------------------------------------------
    def _sync(self) -> None:
        if not self._ensure_sandbox():
            return
        # A volume that breaks later (a ConfigMap deleted) only stops new starts, as in the kubelet.
        if not self._ensure_volumes() and not any(c.starts for c in self.containers):
            return
        for c in self.containers:
            self._reap(c)
            self._enforce_kill(c)
            self._probe(c)  # before any start decision: a sidecar's startup probe gates the next init
        if self.failed_init:
            for c in self.containers:
                c.stop_restarts = True
                if c.run is not None and c.run.kill_deadline is None:
                    self._kill(c, self._grace())
            return
        if not self._sync_init():
            # A sidecar waiting for its startup probe holds the regular containers back, so probes run here too.
            for c in self.containers:
                self._probe(c)
            return
        regular = [c for c in self.containers if c.kind == "regular"]
        for c in regular:
            if c.run is None and self._should_start(c):
                self._start(c)
        if self.restart_policy != "Always" and all(c.run is None and not self._will_restart(c) for c in regular):
            for c in reversed([c for c in self.containers if c.kind == "sidecar"]):
                c.stop_restarts = True
                if c.run is not None and c.run.kill_deadline is None:
                    self._signal(c, signal.SIGTERM)
                    c.run.kill_deadline = time.monotonic() + self._grace()

    def _sync_init(self) -> bool:
        """Advances init containers in order; True once every one is done (sidecars: started)."""
        for c in self.containers:
            if c.kind == "regular":
                break
            if c.kind == "sidecar":
                if c.run is None and self._should_start(c):
                    self._start(c)
                if not c.started:
                    return False
                continue
            if c.completed:
                continue
            if c.run is None and self._should_start(c):
                self._start(c)
            return False
        return True

    def _should_start(self, c: Container) -> bool:
        if c.stop_restarts or time.monotonic() < c.next_start:
            return False
        if c.kind == "init":
            return not c.completed
        return c.starts == 0 or self._will_restart(c)

    def _will_restart(self, c: Container) -> bool:
        if c.run is not None:
            return True
        if c.starts == 0:
            return True
        if c.kind == "sidecar":
            return not c.stop_restarts
        code: int = (c.state.get("terminated") or (c.last_state.get("terminated") if "waiting" in c.state else None)
                or {}).get("exitCode", 0)
        if c.kind == "init":
            return not c.completed and self.restart_policy != "Never"
        return self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and code != 0)

    def _start(self, c: Container) -> None:
        try:
            argv, path, env, image = self._prepare(c)
            mounts = self._mounts(c)
        except (podenv.ConfigError, VolumeError) as err:
            reason = "ErrImagePull" if isinstance(err, ImageError) else "CreateContainerConfigError"
            c.state = {"waiting": {"reason": reason, "message": str(err)}}
            c.next_start = time.monotonic() + RETRY
            self._event("Warning", "Failed", f"Error: {err}", c)
            return
        log_path = self.log_dir / c.name / f"{c.starts}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        root = self.dir / "root" / c.name
        root.mkdir(parents=True, exist_ok=True)
        spec_path = self.dir / f"{c.name}.spec.json"
        descriptor = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump({"argv": argv, "path": path, "env": env, "uid": self.kubelet.uid, "gid": self.kubelet.gid,
                       "hostname": self.hostname, "workingDir": c.spec.get("workingDir", ""),
                       "root": str(root), "mounts": mounts}, handle)
        if self.net is None:
            raise RuntimeError(f"{c.name}: the pod's network namespace is gone")
        chain = [self.kubelet.tools["nsenter"], f"--net=/run/netns/{self.net.netns}", "--",
                 self.kubelet.tools["unshare"], "--mount", "--uts", "--propagation", "private", "--",
                 sys.executable, "-I", podexec.__file__, str(spec_path)]
        with log_path.open("ab") as out:
            popen = subprocess.Popen(chain, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        self.kubelet.track(popen.pid)
        reaper.spawned(popen, chain)
        started = time.monotonic()
        run = Run(popen, image, started, now(), env, uid=self.kubelet.uid)
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            if c.spec.get(kind):
                run.probers[kind] = probes.Prober(c.spec[kind], started)
        c.run = run
        log.info("%s/%s %s: started pid %d (start #%d)", self.namespace, self.pod_name, c.name, popen.pid,
                 c.starts + 1)
        if c.starts:
            self._event("Normal", "Started", f"Restarted container {c.name}", c)
        else:
            self._event("Normal", "Started", f"Started container {c.name}", c)
        c.starts += 1
        c.state = {"running": {"startedAt": run.started_at}}
        c.started = "startupProbe" not in run.probers
        c.ready = c.started and "readinessProbe" not in run.probers and c.kind != "init"
        hook = ((c.spec.get("lifecycle") or {}).get("postStart"))
        if hook and not self._run_hook(c, hook, self._grace()):
            self._event("Warning", "FailedPostStartHook", f"PostStartHook failed for container {c.name}", c)
            self._kill(c, 0)

    def _prepare(self, c: Container) -> tuple[list[str], str, dict[str, str], str]:
        ref = c.spec.get("image", "")
        image = self.kubelet.images.get(ref)
        if image is None:
            raise ImageError(self.kubelet.missing_image_message(ref))
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            bad = probes.unsupported(c.spec.get(kind))
            if bad:
                raise podenv.ConfigError(f"container {c.name!r} {kind}.{bad} is not supported by the process kubelet")
        for hook_kind, hook in ((c.spec.get("lifecycle") or {}).items()):
            if hook_kind in ("preStop", "postStart") and not any(k in hook for k in ("exec", "httpGet", "sleep")):
                raise podenv.ConfigError(f"container {c.name!r} lifecycle.{hook_kind}: only exec, httpGet and sleep "
                                         "are supported by the process kubelet")
        wanted = [(c.spec.get("securityContext") or {}).get("runAsUser"),
                  (self.pod["spec"].get("securityContext") or {}).get("runAsUser")]
        if next((u for u in wanted if u is not None), None) == 0:
            raise podenv.ConfigError(f"container {c.name!r} asks for runAsUser 0: the process kubelet never runs "
                                     f"containers as root (it runs them as {self.kubelet.user!r})")
        defined = podenv.container_env(self._pod_with_ips(), c.spec, self.kubelet.env_lookup)
        argv = podenv.command_line(c.spec, image, defined)
        path = podenv.find_executable(argv[0], ref, image, self.kubelet.uid, self.kubelet.gid)
        env = {"PATH": os.pathsep.join(image.path_dirs), "HOSTNAME": self.hostname, "HOME": "/",
               **image.env, **defined}
        return [path, *argv[1:]], path, env, ref

    def _pod_with_ips(self) -> Manifest:
        status = dict(self.pod.get("status") or {})
        status.update(self._ips())
        return {**self.pod, "status": status}

    def _ips(self) -> Manifest:
        host = self.kubelet.host_ip
        return {"podIP": self.ip, "podIPs": [{"ip": self.ip}], "hostIP": host, "hostIPs": [{"ip": host}]}

    def _mounts(self, c: Container) -> list[Manifest]:
        assert self.volumes is not None
        tmp = self.dir / "tmp" / c.name
        if not tmp.is_dir():
            tmp.mkdir(parents=True)
            os.chmod(tmp, 0o1777)
        own = [{"source": str(tmp), "target": "/tmp", "readOnly": False, "file": False}]
        for name in ("hosts", "resolv.conf", "hostname"):
            own.append({"source": str(self.dir / name), "target": f"/etc/{name}", "readOnly": False, "file": True})
        image = self.kubelet.images[c.spec["image"]]
        # The image's directories at their own paths, even where a private /tmp hides the host's.
        own += [{"source": d, "target": d, "readOnly": True, "file": False} for d in image.path_dirs]
        own += [{"source": src, "target": at, "readOnly": True, "file": True} for at, src in image.files.items()]
        volumes = self.volumes.mounts(c.spec)
        targets = {m["target"].rstrip("/") for m in volumes}
        own = [m for m in own if m["target"] not in targets]
        return sorted(own + volumes, key=lambda m: m["target"].rstrip("/").count("/"))

    def _reap(self, c: Container) -> None:
        if c.run is None:
            return
        code = c.run.popen.poll()
        if code is None:
            return
        self.kubelet.untrack(c.run.popen.pid)
        if code < 0:
            code = 128 - code
        run, c.run = c.run, None
        log.info("%s/%s %s: exited with %d", self.namespace, self.pod_name, c.name, code)
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": run.started_at, "finishedAt": now(), "containerID": f"process://{run.popen.pid}"}
        c.started = c.ready = False
        c.state = {"terminated": terminated}
        if c.kind == "init" and code == 0:
            c.completed = True
            return
        if time.monotonic() - run.started > 2 * self.kubelet.backoff[1]:
            c.crashes = 0  # ran long enough: the kubelet forgets its back-off
        if self._stopping() or not self._will_restart(c):
            if c.kind == "init" and self.restart_policy == "Never":
                self.failed_init = True
            return
        delay = 0.0 if c.crashes == 0 else min(self.kubelet.backoff[0] * 2 ** (c.crashes - 1), self.kubelet.backoff[1])
        c.crashes += 1
        c.next_start = time.monotonic() + delay
        c.last_state = {"terminated": terminated}
        if delay > 0:
            pod = f"{self.pod_name}_{self.namespace}({self.uid})"
            c.state = {"waiting": {"reason": "CrashLoopBackOff",
                                   "message": f"back-off {delay:g}s restarting failed container={c.name} pod={pod}"}}
            self._event("Warning", "BackOff", f"Back-off restarting failed container {c.name} in pod {self.pod_name}",
                        c)

    def _stopping(self) -> bool:
        return self._stop_grace is not None or self._gone or bool(self.pod["metadata"].get("deletionTimestamp"))

    def _enforce_kill(self, c: Container) -> None:
        if c.run is not None and c.run.kill_deadline is not None and time.monotonic() >= c.run.kill_deadline:
            self._sigkill(c)

    def _probe(self, c: Container) -> None:
        run = c.run
        if run is None or run.kill_deadline is not None:
            return
        current = time.monotonic()
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            prober = run.probers.get(kind)
            if prober is None or not prober.due(current) or (kind != "startupProbe" and not c.started):
                continue
            if kind == "startupProbe" and c.started:
                continue
            try:
                ok, message = probes.run(prober.probe, self.ip or "", c.spec,
                                         functools.partial(self._exec_code, c))
            except (OSError, ValueError) as err:
                ok, message = False, str(err)
            prober.record(ok, message, time.monotonic())
            label = kind.removesuffix("Probe").capitalize()
            if not ok:
                self._event("Warning", "Unhealthy", f"{label} probe failed: {message}", c)
            if kind == "startupProbe":
                if prober.succeeded:
                    c.started = True
                    c.ready = "readinessProbe" not in run.probers and c.kind != "init"
                elif prober.failed:
                    self._event("Normal", "Killing", f"Container {c.name} failed startup probe, will be restarted", c)
                    self._kill(c, prober.probe.get("terminationGracePeriodSeconds", self._grace()))
                    return
            elif kind == "livenessProbe" and prober.failed:
                self._event("Normal", "Killing", f"Container {c.name} failed liveness probe, will be restarted", c)
                self._kill(c, prober.probe.get("terminationGracePeriodSeconds", self._grace()))
                return
            elif kind == "readinessProbe":
                if prober.succeeded:
                    c.ready = True
                elif prober.failed:
                    c.ready = False

    # -- processes ---------------------------------------------------------------------------------
    def _grace(self) -> float:
        return float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))

    def _signal(self, c: Container, sig: int) -> None:
        if c.run is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.run.popen.pid, sig)  # podexec forwards it to the container's pid 1

    def _sigkill(self, c: Container) -> None:
        """SIGKILL the container's pid 1 first (its PID namespace dies with it and podexec reaps it and
        exits), then podexec's whole process group if anything is left."""
        if c.run is None:
            return
        pid = c.run.container_pid
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                c.run.popen.wait(5)
        if c.run.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(c.run.popen.pid, signal.SIGKILL)
            try:
                c.run.popen.wait(5)
            except subprocess.TimeoutExpired:
                log.warning("container %s of %s/%s survived SIGKILL", c.name, self.namespace, self.pod_name)
        self._reap(c)

    def _kill(self, c: Container, grace: float) -> None:
        """Graceful stop without blocking the loop: SIGTERM now, SIGKILL at the deadline."""
        if c.run is None:
            return
        log.info("%s/%s %s: stopping (grace %ss)", self.namespace, self.pod_name, c.name, grace)
        self._signal(c, signal.SIGTERM)
        c.run.kill_deadline = time.monotonic() + float(grace)
        c.ready = False

    def _kill_all(self) -> None:
        for c in self.containers:
            self._sigkill(c)

    def _exec_code(self, c: Container, argv: Sequence[str], timeout: float) -> int:
        try:
            return self.exec_in(c, argv, timeout).returncode
        except RuntimeError:  # pid 1 not forked yet, or already gone
            return -1

    def exec_in(self, c: Container, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """argv inside the container's namespaces and root, as the run-as user, with its environment."""
        run = c.run
        deadline = time.monotonic() + min(timeout, 10)
        pid = run.container_pid if run else None
        while run is not None and pid is None and run.popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # podexec is still building the container's view
            pid = run.container_pid
        if run is None or pid is None:
            raise RuntimeError(f"container {c.name!r} of pod {self.namespace}/{self.pod_name} is not running")
        chain = [self.kubelet.tools["nsenter"], "-t", str(pid), "-m", "-u", "-n", "-p", "-r", "-w",
                 "-S", str(self.kubelet.uid), "-G", str(self.kubelet.gid), "--", *argv]
        proc = subprocess.Popen(chain, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run.env,
                                start_new_session=True, stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise TimeoutError(f"{argv[0]} timed out after {timeout:g}s") from exc
        return subprocess.CompletedProcess(chain, proc.returncode, out, err)

    def _run_hook(self, c: Container, hook: Manifest, timeout: float) -> bool:
        try:
            if "sleep" in hook:
                time.sleep(min(float(hook["sleep"].get("seconds", 0)), timeout))
                return True
            if "httpGet" in hook:
                return probes.http_get(hook["httpGet"], self.ip or "", c.spec, timeout)[0]
            return self._exec_code(c, hook["exec"]["command"], timeout) == 0
        except (OSError, RuntimeError, TimeoutError, ValueError) as err:
            log.info("hook of %s/%s %s failed: %s", self.namespace, self.pod_name, c.name, err)
            return False

    # -- termination -------------------------------------------------------------------------------
    def _terminate(self, grace: float, *, publish: bool) -> None:
        """preStop + SIGTERM to regular (and running plain init) containers; after they exit, the
        sidecars one by one in reverse order; SIGKILL whatever is left at the deadline."""
        deadline = time.monotonic() + grace
        for c in self.containers:
            c.stop_restarts = True
        first = [c for c in self.containers if c.kind != "sidecar" and c.run is not None]
        self._stop_group(first, deadline, publish)
        for c in reversed([c for c in self.containers if c.kind == "sidecar"]):
            self._stop_group([c], deadline, publish)
        self._kill_all()
        for c in self.containers:
            c.ready = False
        if publish:
            self._publish(terminal=True)

    def _stop_group(self, group: list[Container], deadline: float, publish: bool) -> None:
        group = [c for c in group if c.run is not None]
        if not group:
            return
        hooks = []
        for c in group:
            hook = (c.spec.get("lifecycle") or {}).get("preStop")
            thread = threading.Thread(target=self._pre_stop_then_term, args=(c, hook, deadline), daemon=True)
            thread.start()
            hooks.append(thread)
        while time.monotonic() < deadline and any(c.run is not None for c in group):
            for c in group:
                self._reap(c)
            if publish:
                self._publish()
            time.sleep(0.1)
        for thread in hooks:
            thread.join(0.5)

    def _pre_stop_then_term(self, c: Container, hook: Manifest | None, deadline: float) -> None:
        if hook and c.run is not None and not self._run_hook(c, hook, max(deadline - time.monotonic(), 0.1)):
            self._event("Warning", "FailedPreStopHook", f"PreStopHook failed for container {c.name}", c)
        self._signal(c, signal.SIGTERM)

    def _teardown(self) -> None:
        self._kill_all()
        if self.net is not None:
            delete_pod_net(self.net)
            self.net = None
        if self._ip_index is not None:
            self.kubelet.release_ip(self._ip_index)
            self._ip_index = None
        if self.volumes is not None:
            self.volumes.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- status --------------------------------------------------------------------------------------
    def _init_done(self) -> bool:
        """Every init container done and every sidecar started (or the pod got past that once)."""
        inits = [c for c in self.containers if c.kind != "regular"]
        return all(c.completed or (c.kind == "sidecar" and c.started) for c in inits) or \
            any(c.starts for c in self.containers if c.kind == "regular")

    def phase(self, terminal: bool = False) -> str:
        """The kubelet's pod phase; `terminal` once a deleted pod's containers have all stopped."""
        regular = [c for c in self.containers if c.kind == "regular"]
        exits_ok = all((c.state.get("terminated") or {}).get("exitCode", 1) == 0 for c in regular)
        if self.failed_init:
            return "Failed"
        if terminal:
            return "Succeeded" if exits_ok and all(c.starts for c in regular) else "Failed"
        if not self._init_done() or any(c.starts == 0 for c in regular):
            return "Pending"
        if any(c.run is not None or self._will_restart(c) for c in regular):
            return "Running"
        return "Succeeded" if exits_ok else "Failed"

    def _status(self, terminal: bool) -> Manifest:
        inits = [c for c in self.containers if c.kind != "regular"]
        regular = [c for c in self.containers if c.kind == "regular"]
        initialized = self._init_done()
        containers_ready = not terminal and all(c.ready for c in regular) and \
            all(c.ready for c in inits if c.kind == "sidecar" and c.run is not None)
        values = {"PodReadyToStartContainers": self.net is not None and not terminal, "PodScheduled": True,
                  "Initialized": initialized, "ContainersReady": containers_ready,
                  "Ready": containers_ready and self._gates_pass()}
        self._conditions = pod_conditions(values, self._conditions)
        images = {ref: f"process-kubelet://{ref}" for ref in self.kubelet.images}
        status: Manifest = {
            "phase": self.phase(terminal), "conditions": self._conditions, "startTime": self.start_time,
            "initContainerStatuses": [c.status(images) for c in inits],
            "containerStatuses": [c.status(images) for c in regular],
        }
        if self.ip:
            status.update(self._ips())
        else:
            status.update({"hostIP": self.kubelet.host_ip, "hostIPs": [{"ip": self.kubelet.host_ip}]})
        return status

    def _gates_pass(self) -> bool:
        """The kubelet's readiness gates: each condition a gate names is True in the pod's status (others
        set them; an update of the pod wakes this worker, which recomputes Ready)."""
        gates = [g.get("conditionType") for g in self.pod["spec"].get("readinessGates") or []]
        have = {c.get("type"): c.get("status") for c in (self.pod.get("status") or {}).get("conditions") or []}
        return all(have.get(gate) == "True" for gate in gates)

    def _publish(self, terminal: bool = False) -> None:
        status = self._status(terminal)
        digest = json.dumps(status, sort_keys=True)
        if digest == self._published:
            return
        try:
            self.kubelet.write_status(self.namespace, self.pod_name, status)
            self._published = digest
        except Exception as err:  # the pod may be gone; the next tick retries
            log.debug("status of %s/%s not written: %s", self.namespace, self.pod_name, err)

    def _event(self, kind: str, reason: str, message: str, c: Container | None = None) -> None:
        if (reason, message) in self._events:
            return
        self._events.add((reason, message))
        involved = {"apiVersion": "v1", "kind": "Pod", "name": self.pod_name, "namespace": self.namespace,
                    "uid": self.uid}
        if c is not None:
            section = "initContainers" if c.kind != "regular" else "containers"
            involved["fieldPath"] = f"spec.{section}{{{c.name}}}"
        self.kubelet.event(involved, kind, reason, message)

    def container(self, name: str) -> Container:
        for c in self.containers:
            if c.name == name:
                return c
        raise KeyError(f"pod {self.namespace}/{self.pod_name} has no container {name!r}")


class ImageError(podenv.ConfigError):
    """The image is not in the kubelet's image table (the kubelet's ErrImagePull)."""
