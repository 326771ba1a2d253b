"""A control plane with the deployment and replicaset controllers, and one process kubelet running
the toy image (and, when the toolchain is installed, Multigres v0.1.0) for this package's tests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from multigres_pools.playground.podenv import runnable_by
from tests.conftest import Kube

TOY_IMAGE = "toy.local/toy:1"
# Listed so the era-A pod is told which Multigres is here; maps to the toy like any image would.
V010_STANDIN = "ghcr.io/multigres/multigres:v0.1.0"
HERE = Path(__file__).parent


def _skip_unless_possible() -> None:
    if os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true", "yes"}:
        pytest.skip("the process kubelet runs against the local harness only (it registers a Node and binds pods)")
    if os.geteuid() != 0:
        pytest.skip("the process kubelet needs root (network namespaces, mounts)")
    missing = [t for t in ("ip", "nsenter", "unshare") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the process kubelet needs {', '.join(missing)}")


def run_as_user() -> str:
    """The toolchain's user when it is installed, else `nobody`: never root."""
    from multigres_pools.playground import toolchain

    found = toolchain.available()
    return found.user if found else "nobody"


@pytest.fixture(scope="package")
def _workload_cluster() -> Iterator[object]:
    _skip_unless_possible()
    from multigres_pools.playground.cluster import Cluster

    cluster = Cluster(workload_controllers=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def kube(_workload_cluster) -> Kube:  # type: ignore[no-untyped-def]
    return Kube(_workload_cluster.kubeconfig, _workload_cluster.server, _workload_cluster.version)


@contextlib.contextmanager
def script_image(prefix: str, scripts: dict[str, str]) -> Iterator[Path]:
    """A directory of executable Python scripts, an "image" for the process kubelet, run by an
    interpreter the run-as user may execute. Not under pytest's basetemp: every pytest run on the
    machine resets /tmp/pytest-of-<user> to 0700."""
    import pwd

    account = pwd.getpwnam(run_as_user())
    candidates = [os.path.realpath(sys.executable), "/usr/bin/python3", shutil.which("python3") or ""]
    python = next((p for p in candidates if p and runnable_by(p, account.pw_uid, account.pw_gid)), None)
    if python is None:
        pytest.skip(f"no Python interpreter here is executable by {account.pw_name!r}")
    image = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        image.chmod(0o755)
        for name, body in scripts.items():
            (image / name).write_text(f"#!{python}\n{body}")
            (image / name).chmod(0o755)
        yield image
    finally:
        shutil.rmtree(image, ignore_errors=True)


@pytest.fixture(scope="package")
def toy_image() -> Iterator[Path]:
    """A directory holding `toy` (playground's toy.py)."""
    with script_image("mgp-toy-image-", {"toy": (HERE / "toy.py").read_text()}) as image:
        yield image


def make_kubelet(kube: Kube, toy_image: Path, **kwargs):  # type: ignore[no-untyped-def]
    from multigres_pools.playground import toolchain
    from multigres_pools.playground.process_kubelet import ImageSpec, ProcessKubelet, toolchain_images

    spec = ImageSpec(path_dirs=[str(toy_image)])
    images = {TOY_IMAGE: spec, V010_STANDIN: spec}
    found = toolchain.available()
    if found is not None:
        images.update(toolchain_images(found))  # the real Multigres v0.1.0 images replace the stand-in
    return ProcessKubelet(kube.api_client(), images, run_as_user(), backoff=(1.0, 4.0), **kwargs)


@pytest.fixture(scope="package")
def process_kubelet(kube: Kube, toy_image: Path) -> Iterator[object]:
    kubelet = make_kubelet(kube, toy_image).start()
    try:
        yield kubelet
    finally:
        kubelet.stop()


# -- helpers for the tests ---------------------------------------------------------------------------


def eventually(check: Callable[[], object], timeout: float = 90, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as err:  # keep polling; report the last problem
            last = err
        else:
            if last:
                return last
        time.sleep(0.2)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


def read_pod(core: client.CoreV1Api, namespace: str, name: str) -> dict | None:
    try:
        return json.loads(core.read_namespaced_pod(name, namespace, _preload_content=False).data)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def condition(pod: dict | None, kind: str) -> bool:
    return bool(pod) and any(c["type"] == kind and c["status"] == "True"
                             for c in (pod.get("status") or {}).get("conditions") or [])


def container_status(pod: dict | None, name: str) -> dict:
    status = (pod or {}).get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if entry["name"] == name:
            return entry
    return {}


def toy_pod(name: str, *containers: dict, **spec: object) -> dict:
    return {"metadata": {"name": name, "labels": spec.pop("labels", {"app": name})},  # type: ignore[dict-item]
            "spec": {"terminationGracePeriodSeconds": 5, "containers": list(containers), **spec}}


def toy(name: str, *args: str, **extra: object) -> dict:
    return {"name": name, "image": TOY_IMAGE, "command": ["toy", *args], **extra}
