"""spec.security.grpcTLS on real Multigres v0.1.0 + PostgreSQL 17 (process kubelet, real apiserver):
with one certificate for every process, multiorch elects a primary over mutual TLS, a SQL write
through the multigateway succeeds, and a multipooler's gRPC port refuses clients without TLS or
without a client certificate, while the agent's TLS client gets answers."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import grpc
import psycopg
import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from multigres_pools.dataplane.base import DataPlaneError, ShardTopology
from multigres_pools.dataplane.grpc_tls import GrpcTLS
from multigres_pools.dataplane.v0_1 import MANAGER, V0_1
from multigres_pools.playground import pki
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import SAMPLE, MultigresStack

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]

NAMESPACE, SECRET = "play", "play-grpc-tls"


def _pool_names(namespace: str) -> list[str]:
    """The certificate's names: a wildcard per pool and cell under its headless Service, which is
    where multipooler's registered hostname (the pod's FQDN) lives."""
    spec = model.load_spec(yaml.safe_load(SAMPLE.read_text())["spec"])
    return [naming.pooler_fqdn("*", naming.headless_service_name(spec.shard_id, pool, cell), namespace,
                               layout.CLUSTER_DOMAIN)
            for pool, settings in spec.pools.items() for cell in settings.cells]


def _secret(files: pki.MutualTLS) -> dict:
    data = {name: base64.b64encode(path.read_bytes()).decode() for name, path in (
        (layout.GRPC_TLS_CERT, files.cert), (layout.GRPC_TLS_KEY, files.key), (layout.GRPC_TLS_CA, files.ca_cert))}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NAMESPACE}, "data": data}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> pki.MutualTLS:
    return pki.issue_mutual(tmp_path_factory.mktemp("grpc-pki"), _pool_names(NAMESPACE))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, toolchain: object,
          tls_files: pki.MutualTLS) -> Iterator[MultigresStack]:
    started = MultigresStack(tmp_path_factory.mktemp("stack"), namespace=NAMESPACE,
                             progress=lambda line: print(line, flush=True),
                             agent_args=("--grpc-ca", str(tls_files.ca_cert), "--grpc-cert", str(tls_files.cert),
                                         "--grpc-key", str(tls_files.key)))
    try:
        started.start()
        started.apply_shard(_secret(tls_files))
        shard = started.sample_shard(replicas=3)
        shard["spec"]["security"] = {"grpcTLS": {"secretName": SECRET}}
        started.apply_shard(shard)
        started.wait_serving("play", replicas=3, timeout=600)
        yield started
    finally:
        started.stop()


def _plane(stack: MultigresStack, tls: GrpcTLS | None) -> V0_1:
    return V0_1(dial_host=stack.dial_host, grpc_tls=tls, rpc_timeout=5.0)


def _poolers(stack: MultigresStack):
    plane = _plane(stack, None)  # etcd only: the topology is not behind gRPC
    try:
        return plane.list_poolers(ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default",
                                                "0-inf", ("zone1",)))
    finally:
        plane.close()


def test_multiorch_elects_a_primary_over_mutual_tls_and_the_gateway_takes_a_write(
        stack: MultigresStack, tls_files: pki.MutualTLS) -> None:
    pods = {p["metadata"]["name"]: p for p in stack.pods()}
    for pod in pods.values():
        pooler = next(c for c in pod["spec"]["containers"] if c["name"] == "multipooler")
        assert f"--grpc-ca={layout.GRPC_TLS_DIR}/{layout.GRPC_TLS_CA}" in pooler["args"]
    primary = stack.primary()
    assert primary is not None

    poolers = _poolers(stack)
    plane = _plane(stack, GrpcTLS(str(tls_files.ca_cert), str(tls_files.cert), str(tls_files.key)))
    try:
        # Serving (SQL) can come a moment before every pooler's Status agrees on the rule: asked until
        # it does; a timeout shows what each pooler answered over TLS.
        wait_for(lambda: (leader := plane.leader(poolers)) is not None and leader.hostname.split(".")[0] == primary.pod,
                 60, f"the primary {primary.pod} confirmed over mutual TLS", interval=1,
                 last_seen=lambda: str(plane.survey(poolers)))
    finally:
        plane.close()

    gateway = wait_for(stack.gateway_ip, 300, "a Ready multigateway", interval=1)
    password = stack.password()

    def write() -> bool:
        try:
            with psycopg.connect(stack.dsn(gateway, port=layout.MULTIGATEWAY_PG, password=password),
                                 connect_timeout=5, autocommit=True) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS grpc_tls_probe (v text)")
                conn.execute("INSERT INTO grpc_tls_probe VALUES ('over tls')")
            return True
        except psycopg.OperationalError:
            return False

    wait_for(write, 120, "a write through the multigateway", interval=1)
    with psycopg.connect(stack.dsn(primary.ip, password=password), connect_timeout=5) as conn:
        assert conn.execute("SELECT count(*) FROM grpc_tls_probe WHERE v = 'over tls'").fetchone()[0] >= 1


def test_the_multipooler_refuses_plaintext_and_clients_without_a_certificate(
        stack: MultigresStack, tls_files: pki.MutualTLS) -> None:
    pooler = next(p for p in _poolers(stack) if p.role is keys.Role.PRIMARY)
    target = f"{stack.dial_host(pooler.hostname)}:{pooler.grpc_port}"

    with grpc.insecure_channel(target) as channel:
        status = channel.unary_unary(MANAGER + "Status", request_serializer=bytes, response_deserializer=bytes)
        with pytest.raises(grpc.RpcError) as refused:
            status(b"", timeout=5)
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE, refused.value

    no_client_cert = _plane(stack, GrpcTLS(str(tls_files.ca_cert)))
    try:
        with pytest.raises(DataPlaneError):
            no_client_cert.status(pooler)
    finally:
        no_client_cert.close()

    mutual = _plane(stack, GrpcTLS(str(tls_files.ca_cert), str(tls_files.cert), str(tls_files.key)))
    try:
        assert mutual.status(pooler) is not None
    finally:
        mutual.close()
