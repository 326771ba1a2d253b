"""Pool pods and their data PVCs, with our finalizer and index label.

The containers come from the shard's declared Multigres version (render_pool_era_a: contract §3.9;
render_pool_v0_1: multigres-v0.1.md §5); the pod around them is the same for both. A pod is built
from its per-index values (name, service id, claim); the spec hash is computed once per pool and
cell over the same builder fed with placeholders, so it never depends on the index.
"""

from __future__ import annotations

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from ..state import bootstrap
from . import grpc_tls as render_grpc_tls
from . import layout, spechash
from . import pool_era_a as era_a
from . import pool_v0_1 as v0_1
from .context import ShardContext, cert_volume
from .parts import exporter, pod_security, pvc_spec, scheduling

_PLACEHOLDER_POD = "$(POD_NAME)"
_PLACEHOLDER_SERVICE_ID = "$(SERVICE_ID)"
_PLACEHOLDER_CLAIM = "$(DATA_PVC)"


def backup_claim(ctx: ShardContext, cell: str) -> str:
    """The filesystem backup PVC a pod in `cell` mounts: the shard's one (v0.1.0) or its cell's (era A)."""
    if ctx.version is keys.MultigresVersion.V0_1_0:
        return ctx.name(naming.shard_backup_pvc_name)
    return ctx.name(naming.backup_pvc_name, cell)


def _volumes(ctx: ShardContext, cell: str, claim: str) -> list[Manifest]:
    spec = ctx.spec
    backup: Manifest = (
        {"persistentVolumeClaim": {"claimName": backup_claim(ctx, cell)}}
        if spec.backup.type == "filesystem" else {"emptyDir": {}}
    )
    volumes = [
        {"name": layout.VOL_DATA, "persistentVolumeClaim": {"claimName": claim}},
        {"name": layout.VOL_BACKUP, **backup},
        {"name": layout.VOL_SOCKET, "emptyDir": {}},
        {"name": layout.VOL_PG_HBA, "configMap": {"name": ctx.name(naming.pg_hba_configmap_name)}},
    ]
    if spec.postgres_config_ref:
        ref = spec.postgres_config_ref
        volumes.append({"name": layout.VOL_PG_CONFIG_TEMPLATE, "configMap": {
            "name": ref.name, "items": [{"key": ref.key, "path": layout.PG_CONFIG_TEMPLATE_FILE}]}})
    if spec.postgres_config:
        volumes.append({"name": layout.VOL_PG_EXTRA_CONFIG,
                        "configMap": {"name": ctx.name(naming.postgres_config_configmap_name)}})
    volumes.append(cert_volume(ctx))
    volumes.extend(render_grpc_tls.volumes(ctx))
    if ctx.version is keys.MultigresVersion.V0_1_0:
        volumes.append(v0_1.password_volume(ctx))
    return volumes


def pod_spec(ctx: ShardContext, pool_name: str, cell: str, pod: str, service_id: str, claim: str) -> Manifest:
    pool = ctx.spec.pools[pool_name]
    s3 = ctx.spec.backup.s3 if ctx.spec.backup.type == "s3" else None
    if ctx.version is keys.MultigresVersion.V0_1_0:
        init, main = v0_1.pool_containers(ctx, pool_name, cell, service_id)
        grace = v0_1.termination_grace_seconds(pool)
    else:
        init, main = era_a.pool_containers(ctx, pool_name, cell, service_id)
        grace = layout.TERMINATION_GRACE_SECONDS
    if ctx.spec.monitoring.postgres_exporter.enabled:
        main.append(exporter(ctx))
    spec: Manifest = {
        "hostname": pod,
        "subdomain": ctx.name(naming.headless_service_name, pool_name, cell),
        "terminationGracePeriodSeconds": grace,
        "enableServiceLinks": False,
        "securityContext": pod_security(pool.fs_group),
        "initContainers": init,
        "containers": main,
        "volumes": _volumes(ctx, cell, claim),
        **scheduling(ctx, cell, pool.node_selector, pool.affinity, pool.tolerations),
    }
    if ctx.version is keys.MultigresVersion.V0_1_0:
        # Ready also needs the agent's word that PostgreSQL's recovery matches the pooler's role: only
        # it sees every pooler at once (src/multigres_pools/agent/recovery_gate.py).
        spec["readinessGates"] = [{"conditionType": keys.POD_READINESS_GATE}]
    if s3 is not None and s3.service_account_name:
        spec["serviceAccountName"] = s3.service_account_name
    else:
        spec["automountServiceAccountToken"] = False  # pool pods never talk to the Kubernetes API
    return spec


def pool_spec_hash(ctx: ShardContext, pool_name: str, cell: str) -> str:
    template = pod_spec(ctx, pool_name, cell, _PLACEHOLDER_POD, _PLACEHOLDER_SERVICE_ID, _PLACEHOLDER_CLAIM)
    return spechash.spec_hash(template, ctx.postgres_config_hash)


def _indexed_labels(ctx: ShardContext, pool: str, cell: str, index: int) -> dict[str, str]:
    return {**labels.pool_labels(ctx.sid, pool, cell), keys.LABEL_INDEX: str(index)}


def pool_pod(ctx: ShardContext, pool: str, cell: str, index: int, spec_hash: str) -> Manifest:
    name = ctx.name(naming.pod_name, pool, cell, index)
    annotations = {keys.ANN_SPEC_HASH: spec_hash, keys.ANN_PROJECT_REF: ctx.project_ref}
    if ctx.spec.monitoring.postgres_exporter.enabled:
        annotations.update({
            keys.ANN_PROMETHEUS_SCRAPE: "true",
            keys.ANN_PROMETHEUS_PORT: str(layout.EXPORTER),
            keys.ANN_PROMETHEUS_PATH: "/metrics",
        })
    if ctx.postgres_config_hash:
        annotations[keys.ANN_POSTGRES_CONFIG_HASH] = ctx.postgres_config_hash
    # What the repository check allows, from the spec alone (auto: initdb); the planner resolves auto
    # with the shard's recorded backups (plan_pool.pod_manifest).
    annotations.update(bootstrap.pod_annotation(v0_1.bootstrap_guard(ctx), None))
    metadata = ctx.meta(name, {**_indexed_labels(ctx, pool, cell, index), keys.LABEL_DNS: keys.DNS_PUBLISHED})
    metadata["annotations"] = annotations
    metadata["finalizers"] = [keys.FINALIZER_POD]
    claim = ctx.name(naming.data_pvc_name, pool, cell, index)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(ctx, pool, cell, name, naming.service_id(name), claim),
    }


def data_pvc(ctx: ShardContext, pool: str, cell: str, index: int) -> Manifest:
    """A data PVC without ownerReference: the planner sets it from `whenDeleted`."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.meta(ctx.name(naming.data_pvc_name, pool, cell, index),
                             _indexed_labels(ctx, pool, cell, index), owned=False),
        "spec": pvc_spec(ctx.spec.pools[pool].storage),
    }
