"""The live source of a clone (spec.backup.cloneFrom), read while its repository must still be copied.

Once the copy is recorded the source is not read again: a clone lives on when its source is deleted.
Until then a source that does not exist, is being deleted, is the shard itself, or cannot be copied
(another Multigres version, an S3 repository, a spec the engine refuses) refuses the clone like an
invalid spec: nothing is created, the field and the reason are named.
"""

from __future__ import annotations

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from ..kube.snapshot import Reader
from ..requirements_guard import runtime_requirements
from ..state import clone, facts
from ..state.desired import CloneSource

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ..spec import model

FIELD = "spec.backup.cloneFrom.shard"


def read(reader: Reader, spec: model.MultigresShardSpec, namespace: str, cr: Manifest | None) -> CloneSource | None:
    """The source to copy from, None when there is nothing to copy; raises SpecError when it cannot be."""
    ref = spec.backup.clone_from
    if ref is None or cr is None or clone.copied(cr):
        return None
    where = f"MultigresShard {ref.shard!r} in namespace {namespace}"
    if ref.shard == facts.name(cr):
        raise model.SpecError([f"{FIELD}: {ref.shard!r} is this MultigresShard itself"])
    live = reader.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, ref.shard)
    if live is None:
        raise model.SpecError([f"{FIELD}: no {where}: nothing is created until it exists"])
    if facts.is_terminating(live):
        raise model.SpecError([f"{FIELD}: {where} is being deleted: its repository may go before it is copied"])
    try:
        source = model.load_spec(live.get("spec") or {})
    except model.SpecError as exc:
        raise model.SpecError([f"{FIELD}: the spec of {where} is invalid ({'; '.join(exc.errors)})"]) from exc
    if source.backup.type != "filesystem":
        raise model.SpecError([f"{FIELD}: {where} keeps its backups in S3; cloneFrom copies a filesystem "
                               "repository (its backup PVC)"])
    if source.multigres.version is not spec.multigres.version:
        raise model.SpecError([f"{FIELD}: {where} runs Multigres {source.multigres.version}, this shard "
                               f"{spec.multigres.version}: a clone restores with the source's version"])
    sid = source.shard_id
    password = source.password_secret()
    running = (facts.json_annotation(live, keys.ANN_BACKUP_STATE) or {}).get("running")
    return CloneSource(name=f"{namespace}/{ref.shard}", backup_pvc=naming.shard_backup_pvc_name(sid),
                       password=(password.name, password.key),
                       pool_selector=tuple(sorted({**labels.shard_selector(sid),
                                                   keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}.items())),
                       backup_running=bool(running))
