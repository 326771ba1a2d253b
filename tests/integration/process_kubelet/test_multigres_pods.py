"""Real Multigres v0.1.0 + PostgreSQL 17 processes as pods of the process kubelet (the playground
toolchain's binaries behind the v0.1.0 image references)."""

from __future__ import annotations

import base64
import os

import pytest
from kubernetes import client

from multigres_pools.playground import podnet

from .conftest import condition, container_status, eventually, read_pod

pytestmark = [pytest.mark.cluster, pytest.mark.multigres]

PGCTLD_IMAGE = "ghcr.io/multigres/pgctld:v0.1.0"


@pytest.fixture(scope="module")
def toolchain():  # type: ignore[no-untyped-def]
    from multigres_pools.playground import toolchain as module

    found = module.available()
    if found is None:
        pytest.skip("the Multigres toolchain is not installed (see docs/development.md)")
    return found


def test_pgctld_runs_as_a_pod_on_its_pvc_as_the_toolchain_user(kube, namespace, toolchain, process_kubelet):
    core = client.CoreV1Api(kube.api_client())
    core.create_namespaced_secret(namespace, {"metadata": {"name": "pw"},
                                              "data": {"password": base64.b64encode(b"postgres").decode()}})
    core.create_namespaced_persistent_volume_claim(namespace, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    live = {"httpGet": {"path": "/live", "port": 15400}, "periodSeconds": 1, "failureThreshold": 120}
    container = {
        "name": "postgres", "image": PGCTLD_IMAGE, "command": ["/usr/local/bin/pgctld"],
        "args": ["server", "--pooler-dir=/var/lib/pooler", "--grpc-port=15470", "--http-port=15400",
                 "--pg-port=5432", "--pg-listen-addresses=*", "--grpc-socket-file=/var/lib/pooler/pgctld.sock",
                 "--timeout=30"],
        "env": [{"name": "PGDATA", "value": "/var/lib/pooler/pg_data"},
                {"name": "POSTGRES_USER", "value": "postgres"},
                {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "password"}}}],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/pooler"},
                         {"name": "sockets", "mountPath": "/var/run/postgresql"}],
        "startupProbe": live,
        "livenessProbe": {**live, "failureThreshold": 3},
        # pgctld's /ready also wants postgres accepting on its socket: the test starts it below.
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 15400}, "periodSeconds": 1},
    }
    core.create_namespaced_pod(namespace, {"metadata": {"name": "pool-0"}, "spec": {
        "hostname": "pool-0", "terminationGracePeriodSeconds": 30, "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "sockets", "emptyDir": {}}]}})

    def explain(err: AssertionError) -> AssertionError:
        status = (read_pod(core, namespace, "pool-0") or {}).get("status")
        try:
            log = process_kubelet.logs(namespace, "pool-0", "postgres")[-3000:]
        except FileNotFoundError:
            log = "(none)"
        return AssertionError(f"{err}; status: {status}; log:\n{log}")

    try:
        eventually(lambda: container_status(read_pod(core, namespace, "pool-0"), "postgres").get("started"), 180,
                   what="pgctld started")
    except AssertionError as err:
        raise explain(err) from None

    def run(*argv: str, timeout: float = 30) -> str:
        result = process_kubelet.exec(namespace, "pool-0", "postgres", list(argv), timeout=timeout)
        assert result.returncode == 0, (argv, result.stdout[-2000:], result.stderr[-2000:])
        return result.stdout

    assert run("id", "-u").strip() == str(toolchain.uid)
    assert " 17." in run("postgres", "--version")
    assert process_kubelet.pvc_path(namespace, "data").stat().st_uid == toolchain.uid
    run("test", "-S", "/var/lib/pooler/pgctld.sock")
    # Real PostgreSQL 17 inside the pod, initialised and started with pgctld's own commands.
    flags = ["--pooler-dir=/var/lib/pooler", "--pg-port=5432", "--timeout=120"]
    run("pgctld", "init", *flags, timeout=300)
    run("pgctld", "start", *flags, timeout=300)
    try:
        eventually(lambda: condition(read_pod(core, namespace, "pool-0"), "Ready"), 120, what="pod Ready")
    except AssertionError as err:
        raise explain(err) from None
    assert "accepting" in run("pg_isready", "-h", "/var/lib/pooler/pg_sockets", "-p", "5432")
    netns = process_kubelet._worker(namespace, "pool-0").net.netns
    inside = podnet.netns_pids(netns)
    assert len(inside) > 3  # podexec, pgctld and the postgres it daemonised (with setsid) + its workers

    core.delete_namespaced_pod("pool-0", namespace)
    eventually(lambda: read_pod(core, namespace, "pool-0") is None, 120, what="pod stopped and deleted")
    eventually(lambda: not [pid for pid in inside if os.path.exists(f"/proc/{pid}")], 30,
               what="postgres gone with the pod's PID namespace")
