"""Global topology: register the database and cells (contract §2.7); clean them up when a shard goes."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from ..dataplane.base import DatabaseRegistration, DataPlaneError, Pooler, ShardTopology
from . import podinfo, trust
from .context import Context, ShardView


def registration(view: ShardView) -> tuple[DatabaseRegistration, bool]:
    """What to register, and whether it may overwrite an existing record.

    With a MultigresShard we know the backup location and durability policy, so the record follows it.
    From pods alone (vars mode) we only create a missing record with the defaults, never rewrite one.
    """
    if view.shard is not None:
        cells = tuple(sorted(set(podinfo.cr_cells(view.shard)) | set(view.topology.cells)))
        return podinfo.cr_database(view.shard, cells), True
    return DatabaseRegistration(name=view.topology.database, cells=view.topology.cells), False


def register(ctx: Context, view: ShardView) -> list[str]:
    db, overwrite = registration(view)
    ctx.effect("register")
    try:
        changes = (view.dataplane or ctx.dataplane).register(view.topology, db, overwrite=overwrite)
    except DataPlaneError as exc:
        target = view.shard or (view.pods[0] if view.pods else None)
        if target is not None:
            ctx.kube.event(target, "RegistrationFailed", f"topology registration failed: {exc.message}",
                           warning=True)
        return []
    if changes:
        ctx.log.info("topology registered", extra={"changes": changes})
        target = view.shard or (view.pods[0] if view.pods else None)
        if target is not None:
            ctx.kube.event(target, "TopoRegistered", "; ".join(changes))
    return changes


def cleanup(ctx: Context, shard: Manifest) -> str | None:
    """Handle ANN_TOPOLOGY_CLEANUP=requested on a MultigresShard; returns the value written, if any.

    Unregisters every pooler record of the shard, then the database and every cell no other database
    lists, then answers `done` (or `skipped` when the shard names no topology server).

    Only records that are this MultigresShard's (trust.py): of its namespace and shard, and whose pod,
    if it still exists, it controls. A MultigresShard that copies another one's topology (same
    namespace or not) thus removes nothing of it; while such records remain, the database record
    stays too, and the event names what was kept.
    """
    if podinfo.annotations(shard).get(keys.ANN_TOPOLOGY_CLEANUP) != keys.TopologyCleanup.REQUESTED:
        return None
    topo = podinfo.cr_topology(shard)
    result = keys.TopologyCleanup.SKIPPED
    if topo is not None:
        try:
            plane = ctx.plane_for(shard)
            removed, kept = [], []
            for pooler in plane.list_poolers(topo):
                if not _cleanup_may_remove(ctx, shard, topo, pooler):
                    kept.append(f"pooler {pooler.id}")
                    continue
                ctx.effect("cleanup:unregister")
                plane.unregister(topo, pooler.id)
                removed.append(f"pooler {pooler.id}")
            if kept:
                removed.append(f"kept (not this MultigresShard's): {', '.join(kept)} and the database record")
            else:
                ctx.effect("cleanup:database")
                removed += plane.unregister_database(topo, topo.database, topo.cells)
        except (DataPlaneError, ValueError) as exc:
            ctx.kube.event(shard, "TopoCleanupFailed", f"topology cleanup failed: {getattr(exc, 'message', exc)}",
                           warning=True)
            return None
        ctx.kube.event(shard, "TopoCleanup", "; ".join(removed) or "nothing left to remove")
        result = keys.TopologyCleanup.DONE
    ctx.effect("write:topology-cleanup")
    ctx.kube.patch_shard_annotations(shard, {keys.ANN_TOPOLOGY_CLEANUP: result.value})
    return result.value


def _cleanup_may_remove(ctx: Context, shard: Manifest, topo: ShardTopology, pooler: Pooler) -> bool:
    namespace = podinfo.namespace(shard)
    if not trust.record_belongs(pooler, topo, namespace):
        return False
    pod = ctx.kube.get_pod(namespace, pooler.hostname.split(".")[0]) if pooler.hostname else None
    return pod is None or trust.controlled_by(pod, shard)
