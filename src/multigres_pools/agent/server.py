"""/healthz, /readyz and /metrics on one small HTTP server thread; /metrics behind the gate and the
whole server optionally over TLS (metrics_access.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ..metrics_access import METRICS_PATH, Gate, ReloadingTLS

HANDSHAKE_TIMEOUT_S = 10.0


class _Server(ThreadingHTTPServer):
    tls: ReloadingTLS | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake runs here, in the connection's thread, so a slow client cannot stall accept().
        if self.tls is not None:
            self.tls.maybe_reload()
            request.settimeout(HANDSHAKE_TIMEOUT_S)
            try:
                request = self.tls.context.wrap_socket(request, server_side=True)
            except OSError:  # TLS errors and timeouts included
                return
        super().finish_request(request, client_address)


def serve(host: str, port: int, registry: CollectorRegistry, healthy: Callable[[], tuple[bool, str]],
          ready: Callable[[], tuple[bool, str]], gate: Gate | None = None,
          tls: ReloadingTLS | None = None) -> ThreadingHTTPServer:
    """Serve on host:port in a daemon thread; /metrics is open when `gate` is None."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == METRICS_PATH:
                code, why = gate.check(self.headers.get("Authorization")) if gate else (200, "")
                if code != 200:
                    self._send(code, why.encode() + b"\n")
                    return
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                return
            probe = {"/healthz": healthy, "/readyz": ready}.get(self.path)
            if probe is None:
                self._send(404, b"not found\n")
                return
            ok, detail = probe()
            self._send(200 if ok else 503, (detail or ("ok" if ok else "not ok")).encode() + b"\n")

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass  # probes every few seconds would drown the JSON log

    if ":" in host:
        _Server.address_family = socket.AF_INET6
    server = _Server((host, port), Handler)
    server.tls = tls
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server
