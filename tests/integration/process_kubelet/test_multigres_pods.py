"""Real Multigres v0.1.0 + PostgreSQL 17 processes as pods of the process kubelet (the playground
toolchain's binaries behind the v0.1.0 image references)."""

from __future__ import annotations

import base64

import pytest
from kubernetes import client

from .conftest import container_status, eventually, read_pod

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
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 15400}, "periodSeconds": 1},
    }
    core.create_namespaced_pod(namespace, {"metadata": {"name": "pool-0"}, "spec": {
        "hostname": "pool-0", "terminationGracePeriodSeconds": 30, "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "sockets", "emptyDir": {}}]}})
    try:
        eventually(lambda: container_status(read_pod(core, namespace, "pool-0"), "postgres").get("ready"), 180,
                   what="pgctld ready")
    except AssertionError as err:
        raise AssertionError(f"{err}; log:\n{process_kubelet.logs(namespace, 'pool-0', 'postgres')[-3000:]}") from None
    assert process_kubelet.exec(namespace, "pool-0", "postgres", ["id", "-u"]).stdout.strip() == str(toolchain.uid)
    version = process_kubelet.exec(namespace, "pool-0", "postgres", ["postgres", "--version"]).stdout
    assert " 17." in version
    assert process_kubelet.pvc_path(namespace, "data").stat().st_uid == toolchain.uid
    socket = process_kubelet.exec(namespace, "pool-0", "postgres", ["test", "-S", "/var/lib/pooler/pgctld.sock"])
    assert socket.returncode == 0, socket.stderr
    core.delete_namespaced_pod("pool-0", namespace)
    eventually(lambda: read_pod(core, namespace, "pool-0") is None, 90, what="pgctld pod stopped and deleted")
