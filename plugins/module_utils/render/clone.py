"""The clone's copy pod (state/clone.py says what it runs): pure, from the spec and the live source.

Like the restore drill's pod it is no pool pod (its own component label), has no service account
token and no listener, and has the shard as its controller. It mounts the source's backup PVC
read-only and this shard's read-write; with ReadWriteOnce volumes both must attach to one node, so
it runs beside the source's pool pods (required pod affinity to them), and this shard's backup
volume binds there.
"""

from __future__ import annotations

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from ..state import clone
from ..state.desired import CloneCopy, CloneSource
from .context import ShardContext
from .drill import SHARED_ACCESS
from .parts import container_security, pod_security, resources, scheduling

COPY_TIMEOUT_S = 2 * 3600  # the kubelet's backstop; plan/clone.py ends a copy that runs longer
_SOURCE_VOLUME, _TARGET_VOLUME, _WORK_VOLUME = "source", "target", "work"


def _affinity(ctx: ShardContext, source: CloneSource) -> Manifest | None:
    if any(mode in SHARED_ACCESS for mode in ctx.spec.backup.filesystem.storage.access_modes):
        return None
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(source.pool_selector)}, "topologyKey": "kubernetes.io/hostname"}]}}


def copy_pod(ctx: ShardContext, source: CloneSource) -> Manifest:
    pool = ctx.spec.pools[sorted(ctx.spec.pools)[0]]
    metadata = ctx.meta(ctx.name(naming.clone_copy_pod_name),
                        labels.component_labels(ctx.sid, keys.COMPONENT_CLONE_COPY))
    metadata["annotations"] = {keys.ANN_CLONE: source.name}
    container = {
        "name": keys.CLONE_COPY_CONTAINER,
        "image": ctx.images.postgres,
        "imagePullPolicy": ctx.spec.images.image_pull_policy,
        "command": ["/bin/bash", "-c", clone.script()],
        "env": [{"name": clone.ENV_SOURCE, "value": source.name}],
        "volumeMounts": [{"name": _SOURCE_VOLUME, "mountPath": clone.SOURCE, "readOnly": True},
                         {"name": _TARGET_VOLUME, "mountPath": clone.TARGET},
                         {"name": _WORK_VOLUME, "mountPath": clone.WORK}],
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    spec: Manifest = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": COPY_TIMEOUT_S,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": pod_security(pool.fs_group),
        "containers": [container],
        "volumes": [
            {"name": _SOURCE_VOLUME, "persistentVolumeClaim": {"claimName": source.backup_pvc, "readOnly": True}},
            {"name": _TARGET_VOLUME, "persistentVolumeClaim": {"claimName": ctx.name(naming.shard_backup_pvc_name)}},
            {"name": _WORK_VOLUME, "emptyDir": {"sizeLimit": "64Mi"}},
        ],
        **scheduling(ctx, sorted(pool.cells)[0], pool.node_selector, _affinity(ctx, source), pool.tolerations),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def clone_copy(ctx: ShardContext, source: CloneSource | None) -> CloneCopy | None:
    """The copy for a clone whose source the engine read this pass; None otherwise."""
    if source is None or ctx.spec.backup.clone_from is None:
        return None
    return CloneCopy(source=source, pod_name=ctx.name(naming.clone_copy_pod_name), pod=copy_pod(ctx, source))
