"""--grpc-ca/--grpc-cert/--grpc-key: the agent's gRPC to multipooler over TLS, against the era-A
multipooler double served the way multipooler's --grpc-cert/--grpc-key/--grpc-ca serve it (mutual
TLS), records in a real etcd. The server's certificate is checked against the pooler's registered
hostname even though the agent dials 127.0.0.1; a missing client certificate, a foreign CA or a
plaintext client are refused as an unreachable pooler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from multigres_pools.agent import __main__ as agent_main
from multigres_pools.dataplane.base import DataPlaneError, ShardTopology, find_primary
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.grpc_tls import GrpcTLS
from multigres_pools.playground import pki
from multigres_pools.playground.era_a_double import MultipoolerPeer


@pytest.fixture
def tls_primary(private_etcd, root, tmp_path) -> Iterator[tuple[ShardTopology, pki.Pki]]:  # type: ignore[no-untyped-def]
    """A PRIMARY double registered as `localhost` (a name in the serving certificate), mutual TLS."""
    certs = pki.generate(tmp_path / "pki")
    peer = MultipoolerPeer(hostname="localhost", role="PRIMARY", service_id="p-00000001")
    peer.start(tls=(certs.serving_cert, certs.serving_key, certs.ca_cert))
    try:
        peer.set_sync_standbys([("zone1", "p-00000002")])
        peer.register(private_etcd.endpoint, root)
        yield ShardTopology((private_etcd.endpoint,), root, "postgres", "default", "0-inf", ("zone1",)), certs
    finally:
        peer.stop()


def _sync_members(tls: GrpcTLS | None, topo: ShardTopology) -> list[str]:
    plane = EraA(dial_host=lambda host: "127.0.0.1", rpc_timeout=3, grpc_tls=tls)
    try:
        primary = find_primary(plane.list_poolers(topo))
        assert primary is not None
        return [m.name for m in plane.sync_replication(primary).standbys]
    finally:
        plane.close()


def test_mutual_tls_to_the_pooler_by_its_registered_name(tls_primary) -> None:
    topo, certs = tls_primary
    tls = GrpcTLS(str(certs.ca_cert), str(certs.admin_cert), str(certs.admin_key))
    assert _sync_members(tls, topo) == ["p-00000002"]


def test_no_client_certificate_a_foreign_ca_or_plaintext_are_refused(tls_primary, tmp_path) -> None:
    topo, certs = tls_primary
    foreign = pki.generate(tmp_path / "foreign")
    for tls in (GrpcTLS(str(certs.ca_cert)), GrpcTLS(str(foreign.ca_cert), str(certs.admin_cert), str(certs.admin_key)),
                None):
        with pytest.raises(DataPlaneError):
            _sync_members(tls, topo)


def test_agent_flags_are_checked(tmp_path) -> None:
    with pytest.raises(SystemExit):
        agent_main.build(["--grpc-cert", str(tmp_path / "absent.crt")])
    with pytest.raises(ValueError, match="--grpc-cert and --grpc-key: give both or neither"):
        GrpcTLS(None, "a.crt")
