"""/healthz, /readyz and /metrics on one small aiohttp server (aiohttp is also what the informers run on).

/healthz: the process and its event loop answer. /readyz: this instance leads and its watches
are established, i.e. it is the one that will act on changes. /metrics: behind the gate, and the
whole server optionally over TLS (metrics_access.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ..metrics_access import METRICS_PATH, Gate, ReloadingTLS


def make_app(ready: Callable[[], bool], registry: CollectorRegistry, gate: Gate | None = None,
             tls: ReloadingTLS | None = None) -> web.Application:
    """/metrics is open when `gate` is None."""
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")

    async def metrics(request: web.Request) -> web.Response:
        if tls is not None:
            tls.maybe_reload()  # renewed files serve the next connections
        if gate is not None:
            # The review may call the API server: off the event loop.
            code, why = await asyncio.to_thread(gate.check, request.headers.get("Authorization"))
            if code != 200:
                return web.Response(status=code, text=why + "\n")
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get(METRICS_PATH, metrics)
    return app


async def serve(app: web.Application, host: str, port: int, tls: ReloadingTLS | None = None) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=tls.context if tls else None).start()
    return runner
