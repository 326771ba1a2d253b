"""/healthz, /readyz and /metrics on one small HTTP server thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


def serve(host: str, port: int, registry: CollectorRegistry, healthy: Callable[[], tuple[bool, str]],
          ready: Callable[[], tuple[bool, str]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
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

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server
