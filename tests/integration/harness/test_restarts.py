"""The harness restarts a crashed kube-apiserver or etcd where it was (what the chaos soak relies
on): same port and data, so a client made before the crash keeps working after it."""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client

from multigres_pools.playground.cluster import Cluster, Etcd

pytestmark = pytest.mark.cluster


def _etcd_call(etcd: Etcd, op: str, body: dict[str, str]) -> dict:
    request = urllib.request.Request(f"{etcd.endpoint}/v3/kv/{op}", data=json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=5) as resp:
        return json.loads(resp.read())


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_apiserver_and_etcd_come_back_where_they_were(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "cluster").start()
    try:
        core = client.CoreV1Api(cluster.api_client())
        core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}, "data": {"k": "1"}})
        old_pid = cluster._apiserver.pid if cluster._apiserver else None

        cluster.restart_apiserver(down=0.5)

        assert cluster._apiserver is not None and cluster._apiserver.pid != old_pid
        assert core.read_namespaced_config_map("kept", "default").data == {"k": "1"}  # the same client

        etcd = cluster.topo_etcd
        _etcd_call(etcd, "put", {"key": _b64("/chaos/kept"), "value": _b64("yes")})
        endpoint = etcd.endpoint

        etcd.restart(down=0.5)

        assert etcd.endpoint == endpoint
        found = _etcd_call(etcd, "range", {"key": _b64("/chaos/kept")})
        assert [base64.b64decode(kv["value"]).decode() for kv in found["kvs"]] == ["yes"]
    finally:
        cluster.stop()
