"""The agent's --etcd-ca/--etcd-cert/--etcd-key against a real etcd serving TLS and requiring client
certificates: bare host:port addresses (as Multigres writes them) are dialled over HTTPS, the adapter
reads and writes the topology, and a missing client certificate or a foreign CA is refused."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.dataplane.base import ShardTopology, TopologyUnavailable
from multigres_pools.dataplane.etcd import Etcd, EtcdTLS
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground import pki
from multigres_pools.playground.cluster import Etcd as EtcdServer
from multigres_pools.playground.cluster import stop_process

from .conftest import _etcd_binary


@pytest.fixture(scope="module")
def tls_etcd() -> Iterator[tuple[EtcdServer, pki.Pki]]:
    work = Path(tempfile.mkdtemp(prefix="agent-etcd-tls-"))
    certs = pki.generate(work / "pki")
    server = EtcdServer(_etcd_binary(), work / "data", work / "etcd.log", tls=certs)
    server.start()
    try:
        server.wait_ready()
        yield server, certs
    finally:
        stop_process(server.process)
        shutil.rmtree(work, ignore_errors=True)


def _client_tls(certs: pki.Pki) -> EtcdTLS:
    return EtcdTLS(str(certs.ca_cert), str(certs.admin_cert), str(certs.admin_key))


def test_a_bare_address_is_dialled_over_tls_with_the_client_certificate(tls_etcd) -> None:
    server, certs = tls_etcd
    bare = server.endpoint.removeprefix("https://")
    key = f"/t-{uuid.uuid4().hex[:8]}/k"
    etcd = Etcd(bare, tls=_client_tls(certs))
    try:
        etcd.put(key, b"v")
        assert etcd.get(key)[0] == b"v"
        assert etcd.create(key, b"w") is False  # transactions too
    finally:
        etcd.delete(key)


def test_without_a_client_certificate_or_with_a_foreign_ca_etcd_is_unavailable(tls_etcd, tmp_path) -> None:
    server, certs = tls_etcd
    with pytest.raises(TopologyUnavailable):
        Etcd(server.endpoint, tls=EtcdTLS(str(certs.ca_cert)), timeout=3).get("/k")
    foreign = pki.generate(tmp_path / "foreign")
    with pytest.raises(TopologyUnavailable, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        Etcd(server.endpoint, tls=EtcdTLS(str(foreign.ca_cert), str(certs.admin_cert), str(certs.admin_key)),
             timeout=3).get("/k")
    with pytest.raises(TopologyUnavailable):  # plain HTTP to a TLS port
        Etcd(server.endpoint.replace("https://", "http://"), timeout=3).get("/k")


def test_the_adapter_reads_the_topology_over_tls(tls_etcd) -> None:
    server, certs = tls_etcd
    plane = V0_1(etcd_tls=_client_tls(certs), rpc_timeout=3)
    try:
        topo = ShardTopology((server.endpoint.removeprefix("https://"),), f"/t-{uuid.uuid4().hex[:8]}/global",
                             "postgres", "default", "0-inf", ("zone1",))
        assert plane.list_poolers(topo) == []
    finally:
        plane.close()
