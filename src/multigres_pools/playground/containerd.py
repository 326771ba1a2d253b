"""A private containerd (Debian's 1.6, with runc) for running the images built here: its own root,
state and socket under one temporary folder, nothing shared with a containerd the machine may run.

    with Containerd.started() as ctrd:
        ctrd.load(archive)                               # an OCI archive from `make images`
        out = ctrd.run(ref, ["--version"], entrypoint=True, read_only=True, tmpfs=["/tmp"])
        task = ctrd.spawn(ref); task.pid(); task.kill("SIGTERM"); task.wait()  # a long-running one

`run` uses the image's own configuration (user, environment, working directory), as a kubelet
does, and returns what the process printed; a non-zero exit raises ContainerRunError with the output.
The CRI plugin is off: this is for running images, not for a kubelet.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from multigres_pools.images.buildah import read_archive
from multigres_pools.playground import reaper

NAMESPACE = "multigres-pools"
_START_TIMEOUT_S = 30
_names = itertools.count()


class ContainerRunError(RuntimeError):
    """A container exited non-zero (or containerd refused it); the message carries its output."""


@dataclass(frozen=True)
class ImageConfig:
    """The parts of an image's OCI config a test checks."""
    user: str
    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]
    working_dir: str
    labels: dict[str, str]


def image_config(archive: Path) -> ImageConfig:
    """The configuration of the one image in an OCI archive (what `ctr run` applies)."""
    config = read_archive(archive).config["config"]
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    return ImageConfig(config.get("User", ""), config.get("Entrypoint") or [], config.get("Cmd") or [], env,
                       config.get("WorkingDir", ""), config.get("Labels") or {})


class Containerd:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.address = str(folder / "containerd.sock")
        self.popen: subprocess.Popen[bytes] | None = None

    def _config(self) -> str:
        return "\n".join([
            "version = 2",
            f'root = "{self.folder / "root"}"',
            f'state = "{self.folder / "state"}"',
            'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
            "[grpc]",
            f'  address = "{self.address}"',
            "[ttrpc]",
            f'  address = "{self.folder / "ttrpc.sock"}"',
            "[metrics]",
            '  address = ""',
            "",
        ])

    def start(self) -> Containerd:
        if shutil.which("containerd") is None or shutil.which("runc") is None:
            raise ContainerRunError("containerd or runc is not installed (make setup installs Debian's packages)")
        (self.folder / "config.toml").write_text(self._config())
        log = (self.folder / "containerd.log").open("ab")
        argv = ["containerd", "--config", str(self.folder / "config.toml")]
        self.popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        reaper.spawned(self.popen, argv)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise ContainerRunError(f"containerd exited {self.popen.returncode} at start:\n{self.log()[-3000:]}")
            if self._ctr("version", check=False).returncode == 0:
                return self
            time.sleep(0.2)
        raise ContainerRunError(f"containerd did not answer on {self.address} within {_START_TIMEOUT_S}s:\n"
                                f"{self.log()[-3000:]}")

    def log(self) -> str:
        path = self.folder / "containerd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _ctr(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["ctr", "--address", self.address, "--namespace", NAMESPACE, *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise ContainerRunError(f"ctr {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done

    def load(self, archive: Path) -> None:
        self._ctr("images", "import", str(archive), timeout=600)

    def run(self, ref: str, args: list[str], *, archive: Path | None = None, entrypoint: bool = False,
            read_only: bool = False, tmpfs: tuple[str, ...] = (), env: dict[str, str] | None = None,
            user: str | None = None, timeout: float = 120, check: bool = True) -> str:
        """Run `args` in a new container of `ref` and return its output. With `entrypoint`, args
        follow the image's ENTRYPOINT (read from `archive`), as a pod's `args` without `command` do.
        `check=False` returns the output of a non-zero exit too."""
        argv = list(args)
        if entrypoint:
            if archive is None:
                raise ValueError("entrypoint=True needs the archive to read the ENTRYPOINT from")
            argv = [*image_config(archive).entrypoint, *args]
        options = ["--rm"]
        if read_only:
            options.append("--read-only")
        options += [f"--mount=type=tmpfs,src=tmpfs,dst={path},options=rw:nosuid:nodev:mode=1777" for path in tmpfs]
        options += [f"--env={k}={v}" for k, v in (env or {}).items()]
        if user is not None:
            options.append(f"--user={user}")
        name = f"run-{os.getpid()}-{next(_names)}"
        done = self._ctr("run", *options, ref, name, *argv, check=False, timeout=timeout)
        if check and done.returncode != 0:
            raise ContainerRunError(f"{ref} {' '.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done.stdout + done.stderr

    def spawn(self, ref: str, args: list[str] | None = None) -> Task:
        """Start a container of `ref` (its own ENTRYPOINT and CMD without `args`) and return at
        once: `ctr run --rm` stays in the foreground of a child process, so its exit status is the
        container's."""
        name = f"task-{os.getpid()}-{next(_names)}"
        argv = ["ctr", "--address", self.address, "--namespace", NAMESPACE, "run", "--rm", ref, name, *(args or [])]
        popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        reaper.spawned(popen, argv)
        return Task(self, name, popen)

    def task_pid(self, name: str) -> int | None:
        """The host pid of a running task, None while it is not (yet) running."""
        for line in self._ctr("tasks", "ls").stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) == 3 and fields[0] == name and fields[2] == "RUNNING":
                return int(fields[1])
        return None

    def stop(self) -> None:
        """containerd, every shim it started, and the folder (mounts under it unmounted first)."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(15)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)
        kill_shims(self.address)
        unmount_under(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)

    @classmethod
    @contextlib.contextmanager
    def started(cls) -> Iterator[Containerd]:
        # Short: a unix socket path must stay under 108 bytes.
        ctrd = cls(Path(tempfile.mkdtemp(prefix="ctrd-", dir="/tmp")))
        try:
            yield ctrd.start()
        finally:
            ctrd.stop()


@dataclass(frozen=True)
class Task:
    """A container started by Containerd.spawn."""
    ctrd: Containerd
    name: str
    popen: subprocess.Popen[str]

    def pid(self, timeout: float = 30) -> int:
        """Its process's host pid, once it runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise ContainerRunError(f"{self.name} exited {self.popen.returncode}:\n{self.output()}")
            pid = self.ctrd.task_pid(self.name)
            if pid is not None:
                return pid
            time.sleep(0.1)
        raise ContainerRunError(f"{self.name} did not start within {timeout}s")

    def kill(self, sig: str = "SIGTERM") -> None:
        """Signal its process, as a kubelet's StopContainer does."""
        self.ctrd._ctr("tasks", "kill", "--signal", sig, self.name)

    def wait(self, timeout: float = 30) -> int:
        """Its exit status (ctr removes the container then)."""
        return self.popen.wait(timeout)

    def output(self) -> str:
        return self.popen.stdout.read() if self.popen.stdout is not None and self.popen.poll() is not None else ""


def kill_shims(address: str) -> list[int]:
    """SIGKILL the runc shims of the containerd at `address` (they leave its process group, so they
    are found by argv), which takes their containers with them; their pids."""
    killed = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if argv and argv[0].endswith(b"containerd-shim-runc-v2") and address.encode() in argv:
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
    return killed


def unmount_under(folder: Path) -> None:
    """Lazily unmount every mount below `folder`, deepest first (container root filesystems, shm)."""
    prefix = str(folder) + "/"
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4].startswith(prefix)]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
