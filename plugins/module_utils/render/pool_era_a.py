"""Pool pod containers for Multigres era A (d782aa06), exactly as the Go operator renders them
(contract §3.9): multipooler as a native sidecar init container, pgctld as the `postgres` container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.manifest import Manifest
from . import layout
from .context import ShardContext
from .parts import (
    container_security,
    pgctld_config,
    pool_mounts,
    port,
    postgres_env,
    probes,
    resources,
    secret_env,
)

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import Pool


def _env(ctx: ShardContext) -> list[Manifest]:
    return postgres_env(ctx, secret_env("POSTGRES_PASSWORD", ctx.password.name, ctx.password.key))


def _multipooler(ctx: ShardContext, pool: Pool, cell: str, service_id: str) -> Manifest:
    spec, sid = ctx.spec, ctx.sid
    args = [
        "multipooler",
        f"--http-port={layout.MULTIPOOLER_HTTP}",
        f"--grpc-port={layout.MULTIPOOLER_GRPC}",
        f"--pooler-dir={layout.POOLER_DIR}",
        f"--socket-file={layout.PG_SOCKET_FILE}",
        "--service-map=grpc-pooler",
        f"--topo-global-server-addresses={spec.global_topo_server.address}",
        f"--topo-global-root={spec.global_topo_server.root_path}",
        f"--cell={cell}",
        f"--database={sid.database}",
        f"--table-group={sid.tablegroup}",
        f"--shard={sid.shard}",
        f"--service-id={service_id}",
        f"--pgctld-addr=localhost:{layout.PGCTLD_GRPC}",
        f"--pg-port={layout.POSTGRES}",
        f"--connpool-global-capacity={layout.CONNPOOL_GLOBAL_CAPACITY}",
        f"--connpool-admin-capacity={layout.CONNPOOL_ADMIN_CAPACITY}",
        f"--log-level={spec.log_levels.multipooler}",
        f"--pgbackrest-cert-file={layout.CERT_DIR}/pgbackrest.crt",
        f"--pgbackrest-key-file={layout.CERT_DIR}/pgbackrest.key",
        f"--pgbackrest-ca-file={layout.CERT_DIR}/ca.crt",
    ]
    return {
        "name": "multipooler",
        "image": ctx.images.multipooler,
        "imagePullPolicy": spec.images.image_pull_policy,
        # A native sidecar: started before, and stopped after, the postgres container.
        "restartPolicy": "Always",
        "args": args,
        "ports": [
            port("http", layout.MULTIPOOLER_HTTP),
            port("grpc", layout.MULTIPOOLER_GRPC),
            port("postgres", layout.POSTGRES),
        ],
        "env": _env(ctx),
        "volumeMounts": pool_mounts(ctx),
        "resources": resources(pool.multipooler.resources),
        "securityContext": container_security(pool.fs_group),
        **probes("/live", "/live", layout.MULTIPOOLER_HTTP),
    }


def _pgctld(ctx: ShardContext, pool: Pool) -> Manifest:
    spec = ctx.spec
    extra_args, extra_env, mounts = pgctld_config(ctx)
    args = [
        "server",
        f"--pooler-dir={layout.POOLER_DIR}",
        f"--grpc-port={layout.PGCTLD_GRPC}",
        f"--pg-port={layout.POSTGRES}",
        "--pg-listen-addresses=*",
        f"--log-level={spec.log_levels.pgctld}",
        f"--grpc-socket-file={layout.PGCTLD_GRPC_SOCKET}",
        f"--pg-hba-template={layout.PGCTLD_CONFIG_DIR}/{layout.PG_HBA_KEY}",
        f"--http-port={layout.PGCTLD_HTTP}",
        *extra_args,
        f"--pgbackrest-cert-dir={layout.CERT_DIR}",
        f"--pgbackrest-port={layout.PGBACKREST}",
    ]
    return {
        "name": "postgres",
        "image": ctx.images.postgres,
        "imagePullPolicy": spec.images.image_pull_policy,
        "command": [layout.PGCTLD_BIN],
        "args": args,
        "ports": [
            port("pgctld-http", layout.PGCTLD_HTTP),
            port("pgctld-grpc", layout.PGCTLD_GRPC),
            port("pgbackrest", layout.PGBACKREST),
        ],
        "env": _env(ctx) + extra_env,
        "volumeMounts": pool_mounts(ctx, *mounts),
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
        **probes("/live", "/live", layout.PGCTLD_HTTP),
    }


def pool_containers(ctx: ShardContext, pool_name: str, cell: str,
                    service_id: str) -> tuple[list[Manifest], list[Manifest]]:
    """(initContainers, containers) of an era-A pool pod, without the optional exporter."""
    if ctx.spec.security.grpc_tls is not None:
        # The model refuses it (rule grpc-tls-needs-v0-1); this guards callers that skip validation
        # from rendering plaintext pods for a spec that asked for TLS.
        raise ValueError("spec.security.grpcTLS: gRPC TLS is rendered only for Multigres v0.1.0, not era A")
    pool = ctx.spec.pools[pool_name]
    return [_multipooler(ctx, pool, cell, service_id)], [_pgctld(ctx, pool)]
