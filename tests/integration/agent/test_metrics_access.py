"""/metrics behind Kubernetes authentication and TLS, on the operator's and the agent's real HTTP
servers, reviewed by the real apiserver: no token or an unknown one is 401, a ServiceAccount without
`get /metrics` is 403, one bound to the bundle's metrics-reader ClusterRole is 200; probes never need
a token; HTTPS verifies against the certificate's CA and picks up replaced files."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect
from prometheus_client import CollectorRegistry, Counter

from multigres_pools import metrics_access
from multigres_pools.agent import __main__ as agent_main
from multigres_pools.agent.server import serve as agent_serve
from multigres_pools.install import bundle
from multigres_pools.operator import __main__ as operator_main
from multigres_pools.operator import health
from multigres_pools.playground import pki
from multigres_pools.playground.cluster import free_port
from tests.helpers import service_accounts
from tests.helpers.polling import eventually

pytestmark = pytest.mark.cluster


def _get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture()
def accounts(kube, namespace) -> Iterator[dict[str, str]]:  # type: ignore[no-untyped-def]
    """Tokens of a `reader` bound to (a uniquely named copy of) the bundle's metrics-reader ClusterRole
    and of a `stranger` bound to nothing."""
    admin = connect(str(kube.kubeconfig))
    role = bundle.metrics_rbac()[2]
    role["metadata"]["name"] = name = f"t-metrics-reader-{uuid.uuid4().hex[:6]}"
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]}
    for account in ("reader", "stranger"):
        admin.create({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": account, "namespace": namespace}}, field_manager="test")
    admin.apply(role, "test")
    admin.apply(binding, "test")
    try:
        yield {a: service_accounts.token(admin, a, namespace) for a in ("reader", "stranger")}
    finally:
        admin.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None, name)
        admin.delete("rbac.authorization.k8s.io/v1", "ClusterRole", None, name)


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("multigres_pools_test_scrapes", "a series to find", registry=registry).inc()
    return registry


@contextlib.contextmanager
def _agent_server(argv: list[str], kube) -> Iterator[str]:  # type: ignore[no-untyped-def]
    args = agent_main.parser().parse_args(argv)
    assert metrics_access.check_arguments(args, "--http", args.http) is None
    gate, tls = metrics_access.build(args, args.http, kube.client)
    host, port = metrics_access.split_addr(args.http, "--http")
    server = agent_serve(host, port, _registry(), lambda: (True, "ok"), lambda: (False, "standby"), gate, tls)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _operator_server(argv: list[str], kube) -> Iterator[str]:  # type: ignore[no-untyped-def]
    args = operator_main.parser().parse_args(argv)
    assert metrics_access.check_arguments(args, "--health-addr", args.health_addr) is None
    gate, tls = metrics_access.build(args, args.health_addr, kube.client)
    host, port = metrics_access.split_addr(args.health_addr, "--health-addr")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    app = health.make_app(lambda: False, _registry(), gate, tls)
    runner = asyncio.run_coroutine_threadsafe(health.serve(app, host, port, tls), loop).result(30)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


SERVERS: dict[str, tuple[str, Callable]] = {"agent": ("--http", _agent_server),
                                            "operator": ("--health-addr", _operator_server)}


@pytest.mark.parametrize("program", sorted(SERVERS))
def test_metrics_need_a_token_allowed_to_get_metrics_and_probes_do_not(program, kube, accounts):  # type: ignore[no-untyped-def]
    flag, server = SERVERS[program]
    with server([flag, f"127.0.0.1:{free_port()}", "--metrics-auth", "kubernetes"], kube) as url:
        assert _get(f"{url}/healthz")[0] == 200
        assert _get(f"{url}/readyz")[0] == 503  # answered, not refused: no token needed
        assert _get(f"{url}/metrics") == (401, "a bearer token is required\n")
        assert _get(f"{url}/metrics", "not-a-token")[0] == 401
        code, text = _get(f"{url}/metrics", accounts["stranger"])
        assert code == 403 and "may not get /metrics" in text
        # RBAC caches fill in the background: the new binding may take a moment to count.
        eventually(lambda: _get(f"{url}/metrics", accounts["reader"])[0] == 200, 60, "the reader's binding")
        assert "multigres_pools_test_scrapes_total 1.0" in _get(f"{url}/metrics", accounts["reader"])[1]


@pytest.mark.parametrize("program", sorted(SERVERS))
def test_auto_leaves_a_loopback_address_open(program, kube):  # type: ignore[no-untyped-def]
    flag, server = SERVERS[program]
    with server([flag, f"127.0.0.1:{free_port()}"], kube) as url:
        assert _get(f"{url}/metrics")[0] == 200


def _client_context(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))  # verifies the chain and the name 127.0.0.1


@pytest.mark.parametrize("program", sorted(SERVERS))
def test_https_serves_the_certificate_and_picks_up_renewed_files(program, kube, accounts, tmp_path):  # type: ignore[no-untyped-def]
    flag, server = SERVERS[program]
    first, second = pki.generate(tmp_path / "first"), pki.generate(tmp_path / "second")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(first.serving_cert, cert)
    shutil.copy(first.serving_key, key)
    argv = [flag, f"127.0.0.1:{free_port()}", "--metrics-auth", "kubernetes",
            "--metrics-tls-cert", str(cert), "--metrics-tls-key", str(key)]
    with server(argv, kube) as url:
        assert url.startswith("https://")
        assert _get(f"{url}/healthz", context=_client_context(first.ca_cert))[0] == 200
        with pytest.raises(OSError):  # plain HTTP is not served
            _get(url.replace("https://", "http://") + "/healthz")
        eventually(lambda: _get(f"{url}/metrics", accounts["reader"], _client_context(first.ca_cert))[0] == 200,
                   60, "the reader's binding")
        shutil.copy(second.serving_cert, cert)  # what cert-manager does when it renews
        shutil.copy(second.serving_key, key)
        # /metrics reloads the files (the operator's server on its first request after the change,
        # the agent's on every connection); then new handshakes present the new certificate.
        with contextlib.suppress(OSError):
            _get(f"{url}/metrics", accounts["reader"], _client_context(first.ca_cert))
        assert _get(f"{url}/metrics", accounts["reader"], _client_context(second.ca_cert))[0] == 200
        with pytest.raises(OSError):
            _get(f"{url}/healthz", context=_client_context(first.ca_cert))


def test_bad_metrics_flags_are_refused_naming_the_flag(tmp_path):  # type: ignore[no-untyped-def]
    args = agent_main.parser().parse_args(["--metrics-tls-cert", str(tmp_path / "missing.crt")])
    assert metrics_access.check_arguments(args, "--http", args.http) == (
        "--metrics-tls-cert and --metrics-tls-key: give both or neither")
    args = agent_main.parser().parse_args(["--metrics-tls-cert", str(tmp_path / "x"), "--metrics-tls-key", "y"])
    assert "--metrics-tls-cert:" in (metrics_access.check_arguments(args, "--http", args.http) or "")
    args = operator_main.parser().parse_args(["--health-addr", "8080"])
    assert metrics_access.check_arguments(args, "--health-addr", args.health_addr) == (
        "--health-addr: '8080' is not host:port")
