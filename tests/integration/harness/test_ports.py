"""Port allocation without the pick-then-bind race: a server whose chosen port was taken in between is
started again on another one (playground/ports.py). Each test takes the chosen port itself first."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client

from multigres_pools.playground import binaries
from multigres_pools.playground.cluster import Cluster, Etcd, http_ok

pytestmark = pytest.mark.cluster


@contextmanager
def _taken(port: int) -> Iterator[None]:
    """Another process's listener on `port`, as on a busy machine."""
    with socket.socket() as squatter:
        # SO_REUSEADDR: the port may still be in TIME_WAIT from a server that just stopped on it; a
        # listening socket keeps every other bind out all the same.
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        yield


def test_etcd_starts_on_other_ports_when_its_chosen_port_is_taken(tmp_path: Path) -> None:
    etcd = Etcd(binaries.resolve()["etcd"], tmp_path / "data", tmp_path / "etcd.log")
    chosen = etcd.port
    try:
        with _taken(chosen):
            etcd.start()
            etcd.wait_ready()
            assert etcd.port != chosen and http_ok(f"{etcd.endpoint}/health")
        assert "address already in use" in etcd.log.read_text()  # the first start did hit it
        etcd.stop()
        with _taken(etcd.port):  # a restart keeps the ports it served on (and its data): no move
            etcd.start()
            with pytest.raises(RuntimeError, match="keeps its ports"):
                etcd.wait_ready()
    finally:
        etcd.stop()


def test_an_etcd_restarted_on_given_ports_does_not_move(tmp_path: Path) -> None:
    etcd = Etcd(binaries.resolve()["etcd"], tmp_path / "data", tmp_path / "etcd.log")
    with _taken(etcd.port):
        fixed = Etcd(etcd.binary, etcd.data_dir, etcd.log, port=etcd.port, peer_port=etcd.peer_port)
        fixed.start()
        try:
            with pytest.raises(RuntimeError, match="keeps its ports"):
                fixed.wait_ready()
        finally:
            fixed.stop()


def test_kube_apiserver_starts_on_another_port_when_its_port_is_taken() -> None:
    cluster = Cluster()
    chosen = cluster.port
    try:
        with _taken(chosen):
            cluster.start()
        assert cluster.port != chosen and str(cluster.port) in cluster.kubeconfig.read_text()
        names = [ns.metadata.name for ns in client.CoreV1Api(cluster.api_client()).list_namespace().items]
        assert "default" in names
        assert "address already in use" in (cluster.workdir / "kube-apiserver.log").read_text()
    finally:
        cluster.stop()
