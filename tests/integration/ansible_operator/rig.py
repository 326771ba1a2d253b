"""The real operator-sdk Ansible Operator (`ansible-operator`, built by playground/ansible_operator.py)
running our watches.yaml and the collection as the image lays them out, with the base image's
Python packages plus what our image adds (multigres_pools.ansible_operator_image)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

from multigres_pools.ansible_operator_image import ansible_core_pin
from multigres_pools.images import inputs
from multigres_pools.images.catalog import OPERATOR_BASE_SOURCES, base_pins
from multigres_pools.playground import ansible_operator
from multigres_pools.playground.localstack import free_port
from tests.helpers.collection import REPO, VENV_CACHE, build_collection, cached_venv

RUNNER_DIR = Path("/tmp/ansible-operator/runner")  # where ansible-operator writes ansible-runner's inputs
# Each run's event socket: a fixed path in the operator's code (runner/eventapi), not under TMPDIR; a
# run the operator was stopped in leaves its socket behind.
EVENT_SOCKETS = "ansibleoperator-*"


def operator_python() -> Path:
    """A virtualenv as the image has it: the base's pins and its ansible_runner_http plugin (from
    the same module), then what our image installs over them (ansible-core 2.19 and
    meta/requirements.txt, which upgrade some of the base's packages). Built once per machine
    (tests/helpers/collection.py)."""
    module = ansible_operator.module_dir()
    base = [*base_pins(module), str(_plugin_source(module))]
    ours = (ansible_core_pin(REPO), "-r", str(REPO / "meta" / "requirements.txt"))
    return cached_venv(*base, over=ours) / "bin" / "python"


def _plugin_source(module: Path) -> Path:
    """The event plugin's source copied out of the Go module cache, once per content: pip builds a
    local project in place (build/, *.egg-info), and that folder is an input of the Ansible Operator
    base image, which must not change because a test ran."""
    # The image's own input: the same key and the same copy (without build leftovers) as the build's.
    plugin = inputs.tree("ansible_runner_http", module / OPERATOR_BASE_SOURCES / "ansible_runner_http")
    copy = VENV_CACHE / f"ansible-runner-http-{plugin.key[:16]}"
    if not copy.exists():
        VENV_CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}.", dir=VENV_CACHE))
        plugin.write(staging / "src")
        (staging / "src").chmod(0o755)  # copied read-only from the module cache; the build writes in it
        with contextlib.suppress(OSError):  # another session made it first
            (staging / "src").rename(copy)
        shutil.rmtree(staging, ignore_errors=True)
    return copy


def install(root: Path, python: Path) -> Path:
    """The collection built and installed as the image does it; returns the operator's HOME with
    watches.yaml and playbooks/ copied from the installed collection."""
    tarball = build_collection(root / "dist")
    collections = root / "home" / ".ansible" / "collections"
    subprocess.run([str(python.parent / "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
                    str(collections), str(tarball)], check=True, capture_output=True, timeout=120, cwd=root,
                   env={"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(root / "home")})
    installed = collections / "ansible_collections" / "multigres" / "pools"
    home = root / "home"
    shutil.copy(installed / "watches.yaml", home / "watches.yaml")
    shutil.copytree(installed / "playbooks", home / "playbooks")
    return home


class AnsibleOperator:
    """`ansible-operator run` for one namespace, from `home` (its WORKDIR and HOME in the image);
    its output goes to home/ansible-operator.log."""

    def __init__(self, python: Path, home: Path, kubeconfig: Path, namespace: str) -> None:
        self.home, self.namespace = home, namespace
        self.env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
                    "KUBECONFIG": str(kubeconfig), "WATCH_NAMESPACE": namespace,
                    "ANSIBLE_COLLECTIONS_PATH": str(home / ".ansible" / "collections")}
        self.argv = [str(ansible_operator.resolve()), "run", "--watches-file", str(home / "watches.yaml"),
                     "--metrics-bind-address", f"127.0.0.1:{free_port()}",
                     "--health-probe-bind-address", f"127.0.0.1:{free_port()}", "--zap-log-level", "debug"]
        self.popen: subprocess.Popen[bytes] | None = None
        self._sockets_before: set[Path] = set()

    def start(self) -> AnsibleOperator:
        self._sockets_before = set(Path("/tmp").glob(EVENT_SOCKETS))
        with (self.home / "ansible-operator.log").open("ab") as out:
            # A session of its own: stop() reaches the ansible-runner runs it starts.
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                          cwd=self.home, start_new_session=True)
        return self

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log(self) -> str:
        return (self.home / "ansible-operator.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.popen is not None:
            if self.alive():
                self.popen.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(30)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)
            for stale in set(Path("/tmp").glob(EVENT_SOCKETS)) - self._sockets_before:
                _remove_if_unused(stale)
        kind_dir = RUNNER_DIR / "pools.multigres.com" / "v1alpha1" / "MultigresShard"
        shutil.rmtree(kind_dir / self.namespace, ignore_errors=True)
        with contextlib.suppress(OSError):  # and the folders above it, once empty (not /tmp itself)
            for folder in (kind_dir, *kind_dir.parents):
                if folder == RUNNER_DIR.parent.parent:
                    break
                folder.rmdir()


def _remove_if_unused(path: Path) -> None:
    """Remove a unix socket nobody listens on (refused): one our stopped operator left."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            path.unlink(missing_ok=True)
        except OSError:
            pass
