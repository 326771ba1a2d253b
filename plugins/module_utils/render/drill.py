"""The restore drill's pod (state/drill.py says what it runs): pure, from the spec and a backup id.

It is no pool pod: its own component label (so nothing that selects pool pods, the PDBs, headless
Services, NetworkPolicy, agent and observe, ever counts it), no service account token, no network
listener, the repository read-only (a filesystem one mounted so; S3 with the pods' own settings and
credentials), its scratch space bounded by the size of a pool pod's data volume,
and the shard as its controller so the garbage collector takes it with the shard. It runs where the
repository can be mounted: with a ReadWriteOnce backup volume that is the node of the shard's pool
pods (required pod affinity to them); with S3 anywhere the first pool's placement allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from ..state import drill
from ..state.desired import RestoreDrill
from . import layout
from .context import ShardContext
from .parts import container_security, pod_security, repository, repository_mounts, resources, s3_env, scheduling

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import BackupVerify

SHARED_ACCESS = ("ReadWriteMany", "ReadOnlyMany")


def _affinity(ctx: ShardContext) -> Manifest | None:
    """Beside a pool pod when the backup volume attaches to one node at a time."""
    if ctx.spec.backup.type != "filesystem" or any(
            mode in SHARED_ACCESS for mode in ctx.spec.backup.filesystem.storage.access_modes):
        return None
    selector = {**labels.shard_selector(ctx.sid), keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector}, "topologyKey": "kubernetes.io/hostname"}]}}


def drill_pod(ctx: ShardContext, verify: BackupVerify, backup_id: str) -> Manifest:
    pool = ctx.spec.pools[sorted(ctx.spec.pools)[0]]
    repo = repository(ctx)
    timeout = int(verify.timeout_seconds)
    metadata = ctx.meta(ctx.name(naming.restore_drill_pod_name),
                        labels.component_labels(ctx.sid, keys.COMPONENT_RESTORE_DRILL))
    metadata["annotations"] = {keys.ANN_RESTORE_DRILL: backup_id}
    container = {
        "name": keys.RESTORE_DRILL_CONTAINER,
        "image": ctx.images.postgres,
        "imagePullPolicy": ctx.spec.images.image_pull_policy,
        "command": ["/bin/sh", "-c", drill.script(repo, timeout)],
        "env": [{"name": drill.ENV_BACKUP, "value": backup_id},
                {"name": drill.ENV_QUERY, "value": verify.query},
                {"name": drill.ENV_DATABASE, "value": verify.database},
                {"name": drill.ENV_USER, "value": ctx.spec.postgres_superuser},
                *s3_env(ctx)],
        "volumeMounts": [{"name": "drill", "mountPath": drill.DATA}, *repository_mounts(repo)],
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    spec: Manifest = {
        "restartPolicy": "Never",
        # A backstop for when no engine runs to end it: the kubelet stops it a minute after the engine would.
        "activeDeadlineSeconds": timeout + 60,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": pod_security(pool.fs_group),
        "containers": [container],
        # Bounded by what one pod's data volume may hold: a restore that outgrows it is evicted, never
        # filling the node under the shard's own pods.
        "volumes": [{"name": "drill", "emptyDir": {"sizeLimit": pool.storage.size}},
                    *([{"name": layout.VOL_BACKUP, "persistentVolumeClaim": {
                        "claimName": ctx.name(naming.shard_backup_pvc_name), "readOnly": True}}]
                      if not repo.s3 else [])],
        **scheduling(ctx, sorted(pool.cells)[0], pool.node_selector, _affinity(ctx), pool.tolerations),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def restore_drill(ctx: ShardContext) -> RestoreDrill | None:
    """The drill of a v0.1.0 shard with spec.backup.verify; None otherwise."""
    verify = ctx.spec.backup.verify
    if verify is None or ctx.version is not keys.MultigresVersion.V0_1_0:
        return None
    return RestoreDrill(schedule=verify.schedule, timeout_s=float(verify.timeout_seconds),
                        pod_name=ctx.name(naming.restore_drill_pod_name),
                        pod=lambda backup_id: drill_pod(ctx, verify, backup_id))
