"""Shared fixtures: a real control plane for the whole session, a namespace per test, the kubelet
helper and the topology etcd. See docs/development.md."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient


@dataclass
class Kube:
    kubeconfig: Path
    server: str
    version: str

    def api_client(self):  # type: ignore[no-untyped-def]
        from multigres_pools.playground.kubeclient import api_client

        return api_client(self.kubeconfig)

    def client(self):  # type: ignore[no-untyped-def]
        """The engine's KubeClient: what the agent and the operator use."""
        from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect

        return connect(str(self.kubeconfig))


@dataclass
class TopoEtcd:
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"


def _use_existing() -> bool:
    return os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def _cluster() -> Iterator[object | None]:
    if _use_existing():
        yield None
        return
    from multigres_pools.playground.cluster import Cluster

    cluster = Cluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kube(_cluster) -> Kube:  # type: ignore[no-untyped-def]
    if _cluster is None:
        path = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
        from kubernetes import client

        kube = Kube(path, "", "existing")
        kube.server = kube.api_client().configuration.host
        kube.version = client.VersionApi(kube.api_client()).get_code().git_version
        return kube
    return Kube(_cluster.kubeconfig, _cluster.server, _cluster.version)


@pytest.fixture(scope="session")
def topo_etcd(_cluster) -> TopoEtcd:  # type: ignore[no-untyped-def]
    if _cluster is None:
        endpoint = os.environ.get("TOPO_ETCD", "http://127.0.0.1:2379").removeprefix("http://")
        host, port = endpoint.rsplit(":", 1)
        return TopoEtcd(host, int(port))
    return TopoEtcd(_cluster.topo_etcd.host, _cluster.topo_etcd.port)


def _test_namespace(kube: Kube) -> Iterator[str]:
    from kubernetes import client

    core = client.CoreV1Api(kube.api_client())
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"multigres-pools/test": "true"}}})
    try:
        yield name
    finally:
        _delete_namespace(core, name)


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    yield from _test_namespace(kube)


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    """A second namespace, for what another user does elsewhere (forgery tests)."""
    yield from _test_namespace(kube)


def _delete_namespace(core, name: str) -> None:  # type: ignore[no-untyped-def]
    """Strip finalizers the test's own controllers may have left, then let the namespace controller
    remove everything."""
    for pod in core.list_namespaced_pod(name).items:
        if pod.metadata.finalizers:
            core.patch_namespaced_pod(pod.metadata.name, name, {"metadata": {"finalizers": None}})
    core.delete_namespace(name, propagation_policy="Background")


@pytest.fixture
def kube_client(kube: Kube) -> Iterator[KubeClient]:
    """The engine's KubeClient with the MultigresShard CRD installed; fresh per test, so its request
    counts (cleared after the install) are the test's own."""
    from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect

    from multigres_pools.playground.localstack import install_crd

    client = connect(str(kube.kubeconfig))
    try:
        install_crd(client)
        client.counts.clear()
        yield client
    finally:
        client.close()


@pytest.fixture
def kubelet(kube: Kube):  # type: ignore[no-untyped-def]
    from multigres_pools.playground.kubelet import FakeKubelet

    return FakeKubelet(kube.api_client())


def pytest_sessionstart(session) -> None:  # type: ignore[no-untyped-def]
    """Kill what runs that died (SIGKILL, a lost terminal) left behind, then record this run's own
    spawns (playground/reaper.py: only recorded process groups, never by ancestry)."""
    from multigres_pools.playground import process_kubelet, reaper
    from multigres_pools.playground.realnode import sweep

    for group in reaper.reap_dead_runs():
        print(f"reaper: killed process group {group.pgid} ({' '.join(group.argv)}) of a dead run", flush=True)
    if sweep.sweep_dead_run():
        print("reaper: removed what a dead run's real node left (containers, mounts, rules)", flush=True)
    left = process_kubelet.sweep()
    if left:
        print(f"reaper: removed what dead process kubelets left: {', '.join(left)}", flush=True)
    reaper.enable()


def pytest_sessionfinish(session, exitstatus) -> None:  # type: ignore[no-untyped-def]
    """Every fixture is torn down by now: a recorded group still alive was leaked by a test."""
    from multigres_pools.playground import reaper

    for group in reaper.reap_own():
        print(f"reaper: killed process group {group.pgid} ({' '.join(group.argv)}) a test left running",
              flush=True)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """Everything that asks for the cluster is marked `cluster`, so `-m "not cluster"` runs the rest."""
    cluster_fixtures = {"kube", "namespace", "kubelet", "topo_etcd", "_cluster"}
    for item in items:
        if cluster_fixtures & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


def pytest_report_header(config) -> list[str]:  # type: ignore[no-untyped-def]
    from multigres_pools.playground import binaries

    mode = "existing cluster (USE_EXISTING_CLUSTER)" if _use_existing() else "local harness"
    return [f"kubernetes: {binaries.KUBE_VERSION}, etcd {binaries.ETCD_VERSION}, {mode}"]
