"""Mutual TLS on Multigres v0.1.0 gRPC from `spec.security.grpcTLS` (docs/operations.md, "TLS for gRPC").

Every server (servenv: multipooler, multiorch, multigateway) gets `--grpc-cert/--grpc-key` and
`--grpc-ca`, which makes it require a client certificate signed by that CA. multiorch and
multigateway dial multipoolers (and gateways dial each other) with the `--multipooler-grpc-*` client
flags (go/common/rpcclient/conn_cache.go), and refuse to start without TLS (`require-tls`).
multipooler dials pgctld with insecure credentials only (multipooler/manager), so pgctld keeps
plaintext gRPC and listens on the pod's loopback instead. Nothing here is rendered when the field is
unset, so shards without it keep their pod templates (and spec hashes) unchanged.
"""

from __future__ import annotations

from ..core.manifest import Manifest
from . import layout
from .context import ShardContext


def _file(name: str) -> str:
    return f"{layout.GRPC_TLS_DIR}/{name}"


def enabled(ctx: ShardContext) -> bool:
    return ctx.spec.security.grpc_tls is not None


def volumes(ctx: ShardContext) -> list[Manifest]:
    """The user's Secret as a read-only volume (mode 0440: the pod's fsGroup reads it)."""
    tls = ctx.spec.security.grpc_tls
    if tls is None:
        return []
    files = (layout.GRPC_TLS_CERT, layout.GRPC_TLS_KEY, layout.GRPC_TLS_CA)
    return [{"name": layout.VOL_GRPC_TLS, "secret": {
        "secretName": tls.secret_name, "defaultMode": 0o440, "items": [{"key": f, "path": f} for f in files]}}]


def cell_fs_group(ctx: ShardContext) -> int | None:
    """multiorch and multigateway pods set no fsGroup of their own; with the Secret mounted they need
    one to read it (pool pods have theirs, pool.fsGroup)."""
    return layout.CELL_FS_GROUP if enabled(ctx) else None


def mounts(ctx: ShardContext) -> list[Manifest]:
    if not enabled(ctx):
        return []
    return [{"name": layout.VOL_GRPC_TLS, "mountPath": layout.GRPC_TLS_DIR, "readOnly": True}]


def server_args(ctx: ShardContext) -> list[str]:
    """Serve gRPC over TLS and require client certificates signed by ca.crt."""
    if not enabled(ctx):
        return []
    return [f"--grpc-cert={_file(layout.GRPC_TLS_CERT)}", f"--grpc-key={_file(layout.GRPC_TLS_KEY)}",
            f"--grpc-ca={_file(layout.GRPC_TLS_CA)}"]


def client_args(ctx: ShardContext) -> list[str]:
    """Dial multipoolers (and other gateways) over TLS with the client certificate."""
    tls = ctx.spec.security.grpc_tls
    if tls is None:
        return []
    args = [f"--multipooler-grpc-cert={_file(layout.GRPC_TLS_CERT)}",
            f"--multipooler-grpc-key={_file(layout.GRPC_TLS_KEY)}",
            f"--multipooler-grpc-ca={_file(layout.GRPC_TLS_CA)}",
            "--multipooler-grpc-require-tls=true"]
    if tls.server_name:
        args.append(f"--multipooler-grpc-server-name={tls.server_name}")
    return args


def pgctld_args(ctx: ShardContext) -> list[str]:
    """pgctld's plaintext gRPC only on loopback, where multipooler dials it (localhost)."""
    return [f"--grpc-bind-address={layout.LOOPBACK}"] if enabled(ctx) else []
