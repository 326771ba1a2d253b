"""Spec to desired objects: pure, deterministic, no cluster access (the render half of the engine).

`desired_state` returns the `Desired` contract the planner consumes; `manifests` expands it into
the full, sorted list of objects (pods and data PVCs included) for previews and GitOps folders.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from ..core.manifest import Manifest
from ..spec import maintenance
from ..state.desired import CloneSource, Desired, DesiredPool, PVCPolicy
from . import cell as cell_objects
from . import infra, security
from .clone import clone_copy
from .context import ShardContext, build_context
from .drill import restore_drill
from .pod import data_pvc, pool_pod, pool_spec_hash
from .pool_v0_1 import bootstrap_guard

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import MultigresShardSpec

# Apply order when a tool applies the whole list: config first, pods last.
KIND_ORDER = (
    "NetworkPolicy", "ConfigMap", "Certificate", "Service", "PersistentVolumeClaim", "PodDisruptionBudget",
    "Deployment", "Pod",
)


def sort_key(obj: Manifest) -> tuple[int, str, str]:
    kind = obj["kind"]
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (rank, kind, obj["metadata"]["name"])


def _shard_objects(ctx: ShardContext) -> list[Manifest]:
    spec = ctx.spec
    objects = [infra.pg_hba_configmap(ctx)]
    if spec.security.network_policy.enabled:
        objects.append(security.network_policy(ctx))
    if spec.postgres_config:
        objects.append(infra.postgres_config_configmap(ctx))
    if spec.backup.pgbackrest_tls.mode == "certManager":
        objects.append(infra.pgbackrest_certificate(ctx))
    for pool in sorted(spec.pools):
        for cell in spec.pools[pool].cells:
            objects += [infra.headless_service(ctx, pool, cell), infra.pod_disruption_budget(ctx, pool, cell)]
    for cell in spec.multiorch_cells():
        objects += [cell_objects.multiorch_deployment(ctx, cell), cell_objects.multiorch_service(ctx, cell)]
    for cell in spec.multigateway_cells():
        objects += [cell_objects.multigateway_deployment(ctx, cell), cell_objects.multigateway_service(ctx, cell)]
    if spec.backup.type == "filesystem":
        objects += infra.backup_pvcs(ctx)
    return sorted(objects, key=sort_key)


def _pools(ctx: ShardContext) -> tuple[DesiredPool, ...]:
    pools = []
    for pool in sorted(ctx.spec.pools):
        settings = ctx.spec.pools[pool]
        policy = ctx.spec.pvc_policy(pool)
        for cell in settings.cells:
            spec_hash = pool_spec_hash(ctx, pool, cell)
            pools.append(DesiredPool(
                pool=pool,
                cell=cell,
                replicas=settings.replicas_per_cell,
                spec_hash=spec_hash,
                storage_size=settings.storage.size,
                when_scaled=PVCPolicy(policy.when_scaled),
                when_deleted=PVCPolicy(policy.when_deleted),
                pod=partial(pool_pod, ctx, pool, cell, spec_hash=spec_hash),
                pvc=partial(data_pvc, ctx, pool, cell),
                decommission=frozenset(settings.decommission),
                fenced=frozenset(settings.fenced),
            ))
    return tuple(pools)


def desired_state(
    spec: MultigresShardSpec,
    namespace: str,
    *,
    owner: Mapping[str, str] | None = None,
    referenced_config_hash: str = "",
    project_ref: str | None = None,
    clone_source: CloneSource | None = None,
) -> Desired:
    """What should exist for `spec` in `namespace`.

    owner: {"name", "uid"} of the MultigresShard; when given, every object except the data PVCs
    (whose owner follows whenDeleted, set by the planner) carries it as controller reference.
    referenced_config_hash: `spechash.config_hash` of the postgresConfigRef value, if any.
    clone_source: spec.backup.cloneFrom's source as read live, while its repository must be copied.
    """
    ctx = build_context(spec, namespace, owner=owner, referenced_config_hash=referenced_config_hash,
                        project_ref=project_ref)
    generated_tls = infra.generated_pgbackrest_tls(ctx) if ctx.spec.backup.pgbackrest_tls.mode == "auto" else None
    windows = tuple(maintenance.window(list(w.days), w.start, dt.timedelta(seconds=float(w.seconds)))
                    for w in spec.maintenance_windows)
    source = spec.backup.clone_from
    return Desired(shard=ctx.sid, namespace=namespace, objects=tuple(_shard_objects(ctx)), pools=_pools(ctx),
                   generated_tls=generated_tls, generated_password=infra.generated_password(ctx, clone_source),
                   windows=windows, bootstrap=bootstrap_guard(ctx), drill=restore_drill(ctx),
                   clone_from=f"{namespace}/{source.shard}" if source else None,
                   clone=clone_copy(ctx, clone_source))


def manifests(desired: Desired) -> list[Manifest]:
    """Every object of `desired`, pods and data PVCs included, in apply order."""
    objects = list(desired.objects)
    for pool in desired.pools:
        for index in range(pool.replicas):
            objects += [pool.pvc(index), pool.pod(index)]
    return sorted(objects, key=sort_key)
