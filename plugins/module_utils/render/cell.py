"""The per-cell Deployments and their Services: multiorch (always) and multigateway (opt-in, v0.1.0).

In v0.1.0 every process that registers itself in the topology gets `--hostname=$(POD_IP)` and
`--service-id=$(POD_NAME)` from the downward API: a Deployment's pods have no stable DNS name, the
pod IP is reachable from every other pod, and the pod name makes the record traceable to its pod.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from . import grpc_tls as render_grpc_tls
from . import layout
from .context import ShardContext
from .parts import (
    container_security,
    field_env,
    http_probe,
    pod_security,
    port,
    probes,
    resources,
    scheduling,
    svc_port,
)

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import CellDeployment, FailoverBuffer


def _selector(ctx: ShardContext, component: str, cell: str) -> dict[str, str]:
    return {
        keys.LABEL_APP_COMPONENT: component,
        keys.LABEL_APP_INSTANCE: ctx.sid.cluster,
        **labels.shard_selector(ctx.sid),
        keys.LABEL_CELL: cell,
    }


def _topology_args(ctx: ShardContext, cell: str) -> list[str]:
    topo = ctx.spec.global_topo_server
    return [f"--topo-global-server-addresses={topo.address}", f"--topo-global-root={topo.root_path}",
            f"--cell={cell}"]


def _registration(ctx: ShardContext) -> tuple[list[str], list[Manifest]]:
    """(args, env) naming a v0.1.0 process in the topology by its pod; nothing for era A."""
    if ctx.version is not keys.MultigresVersion.V0_1_0:
        return [], []
    return (["--service-id=$(POD_NAME)", "--hostname=$(POD_IP)"],
            [field_env("POD_NAME", "metadata.name"), field_env("POD_IP", "status.podIP")])


def _command(ctx: ShardContext, binary: str) -> tuple[Manifest, list[str]]:
    """(command field, leading args): v0.1.0 names the binary; era A passes it as the first arg to
    the image's entrypoint, as the Go operator does."""
    if ctx.version is keys.MultigresVersion.V0_1_0:
        return {"command": [f"{layout.MULTIGRES_BIN_DIR}/{binary}"]}, []
    return {}, [binary]


def _deployment(ctx: ShardContext, component: str, name: str, cell: str, settings: CellDeployment,
                container: Manifest) -> Manifest:
    sid = ctx.sid
    pod_labels = {**labels.component_labels(sid, component, settings.pod_labels), keys.LABEL_CELL: cell}
    template_spec: Manifest = {
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_security(render_grpc_tls.cell_fs_group(ctx)),
        "containers": [container],
        **({"volumes": tls_volumes} if (tls_volumes := render_grpc_tls.volumes(ctx)) else {}),
        **scheduling(ctx, cell, {}, settings.affinity, settings.tolerations),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": ctx.meta(name, {**labels.component_labels(sid, component), keys.LABEL_CELL: cell}),
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": _selector(ctx, component, cell)},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {**settings.pod_annotations, keys.ANN_PROJECT_REF: ctx.project_ref},
                },
                "spec": template_spec,
            },
        },
    }


def _service(ctx: ShardContext, component: str, name: str, cell: str, ports: list[Manifest]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(name, {**labels.component_labels(ctx.sid, component), keys.LABEL_CELL: cell}),
        "spec": {"type": "ClusterIP", "selector": _selector(ctx, component, cell), "ports": ports},
    }


def _grpc_tls_args(ctx: ShardContext) -> list[str]:
    """multiorch and multigateway both serve gRPC and dial multipoolers: server and client TLS flags."""
    return [*render_grpc_tls.server_args(ctx), *render_grpc_tls.client_args(ctx)]


def _grpc_tls_mounts(ctx: ShardContext) -> Manifest:
    return {"volumeMounts": mounts} if (mounts := render_grpc_tls.mounts(ctx)) else {}


# --- multiorch -------------------------------------------------------------------------------------
def _timing_args(ctx: ShardContext) -> list[str]:
    """multiorch's intervals and failover grace: only the ones the spec sets (Multigres' defaults otherwise)."""
    orch = ctx.spec.multiorch
    args = []
    if orch.pooler_health_check_interval:
        args.append(f"--pooler-health-check-interval={orch.pooler_health_check_interval}")
    if orch.recovery_cycle_interval:
        args.append(f"--recovery-cycle-interval={orch.recovery_cycle_interval}")
    if orch.failover_grace_period:
        args.append(f"--leader-failover-grace-period-base={orch.failover_grace_period}")
    if orch.failover_grace_period_max_jitter:
        args.append(f"--leader-failover-grace-period-max-jitter={orch.failover_grace_period_max_jitter}")
    return args


def multiorch_deployment(ctx: ShardContext, cell: str) -> Manifest:
    spec, sid = ctx.spec, ctx.sid
    command, leading = _command(ctx, "multiorch")
    reg_args, reg_env = _registration(ctx)
    container: Manifest = {
        "name": "multiorch",
        "image": ctx.images.multiorch,
        "imagePullPolicy": spec.images.image_pull_policy,
        **command,
        "args": [
            *leading,
            f"--http-port={layout.MULTIORCH_HTTP}",
            f"--grpc-port={layout.MULTIORCH_GRPC}",
            *_topology_args(ctx, cell),
            f"--watch-targets={sid.database}/{sid.tablegroup}/{sid.shard}",
            f"--log-level={spec.log_levels.multiorch}",
            *reg_args,
            *_timing_args(ctx),
            *_grpc_tls_args(ctx),
        ],
        "ports": [port("http", layout.MULTIORCH_HTTP), port("grpc", layout.MULTIORCH_GRPC)],
        **({"env": reg_env} if reg_env else {}),
        **_grpc_tls_mounts(ctx),
        "resources": resources(spec.multiorch.resources),
        "securityContext": container_security(None),
        **probes("/ready", "/live", layout.MULTIORCH_HTTP),
    }
    return _deployment(ctx, keys.COMPONENT_MULTIORCH, naming.multiorch_deployment_name(sid, cell), cell,
                       spec.multiorch, container)


def multiorch_service(ctx: ShardContext, cell: str) -> Manifest:
    return _service(ctx, keys.COMPONENT_MULTIORCH, naming.multiorch_service_name(ctx.sid, cell), cell,
                    [svc_port("http", layout.MULTIORCH_HTTP), svc_port("grpc", layout.MULTIORCH_GRPC)])


# --- multigateway (v0.1.0 only: the model refuses it for era A) -------------------------------------
def multigateway_deployment(ctx: ShardContext, cell: str) -> Manifest:
    spec = ctx.spec
    command, leading = _command(ctx, "multigateway")
    reg_args, reg_env = _registration(ctx)
    container: Manifest = {
        "name": "multigateway",
        "image": ctx.images.multigateway,
        "imagePullPolicy": spec.images.image_pull_policy,
        **command,
        "args": [
            *leading,
            f"--http-port={layout.MULTIGATEWAY_HTTP}",
            f"--grpc-port={layout.MULTIGATEWAY_GRPC}",
            f"--pg-port={layout.MULTIGATEWAY_PG}",
            *_topology_args(ctx, cell),
            f"--log-level={spec.log_levels.multigateway}",
            *_failover_buffer_args(spec.multigateway.failover_buffer),
            *reg_args,
            *_grpc_tls_args(ctx),
        ],
        "ports": [port("http", layout.MULTIGATEWAY_HTTP), port("grpc", layout.MULTIGATEWAY_GRPC),
                  port("postgres", layout.MULTIGATEWAY_PG)],
        "env": reg_env,
        **_grpc_tls_mounts(ctx),
        "resources": resources(spec.multigateway.resources),
        "securityContext": container_security(None),
        # /ready waits for a discovered pooler; startup only needs the HTTP server.
        "startupProbe": http_probe("/live", layout.MULTIGATEWAY_HTTP, 5, 30),
        "livenessProbe": http_probe("/live", layout.MULTIGATEWAY_HTTP, 10),
        "readinessProbe": http_probe("/ready", layout.MULTIGATEWAY_HTTP, 5),
    }
    return _deployment(ctx, keys.COMPONENT_MULTIGATEWAY, naming.multigateway_deployment_name(ctx.sid, cell), cell,
                       spec.multigateway, container)


def _failover_buffer_args(buffer: FailoverBuffer) -> list[str]:
    if not buffer.enabled:
        return []  # the flags appear only when asked for: shards that do not use it render as before
    return ["--buffer-enabled=true", *([f"--buffer-window={buffer.window}"] if buffer.window else [])]


def multigateway_service(ctx: ShardContext, cell: str) -> Manifest:
    """PostgreSQL clients connect to port 5432 of this Service (the gateway listens on 15432)."""
    return _service(ctx, keys.COMPONENT_MULTIGATEWAY, naming.multigateway_service_name(ctx.sid, cell), cell, [
        svc_port("http", layout.MULTIGATEWAY_HTTP),
        svc_port("grpc", layout.MULTIGATEWAY_GRPC),
        svc_port("postgres", layout.POSTGRES, layout.MULTIGATEWAY_PG),
    ])
