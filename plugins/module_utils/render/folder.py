"""MultigresShard documents to a kustomize-ready folder: the CRs for GitOps plus a preview of children.

    kustomization.yaml                  resources: the MultigresShard files (what GitOps applies)
    multigresshard-<name>.yaml          the validated CR, as written (no defaults added)
    preview/<name>/kustomization.yaml   the exact objects the operator will create, for review;
    preview/<name>/<kind>-<name>.yaml   not applied by GitOps (see docs/gitops.md)

Shared by the CLI, the `shard_render` module and the ArgoCD plugin, so all three write the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..core import keys
from ..core.manifest import Manifest
from ..requirements_guard import runtime_requirements
from . import shard as render

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ..spec.model import MultigresShard, SpecError, check_transition, load_shard, load_spec
    from . import output

Include = Literal["all", "crs", "preview"]


def shard_manifest(shard: MultigresShard, namespace: str) -> Manifest:
    """The CR as it goes to Git: the user's fields only, so defaults stay the operator's to evolve."""
    meta: dict[str, Any] = {"name": shard.metadata.name, "namespace": namespace}
    if shard.metadata.labels:
        meta["labels"] = dict(shard.metadata.labels)
    if shard.metadata.annotations:
        meta["annotations"] = dict(shard.metadata.annotations)
    return {
        "apiVersion": keys.API_GROUP_VERSION,
        "kind": keys.SHARD_KIND,
        "metadata": meta,
        "spec": shard.spec.model_dump(mode="json", by_alias=True, exclude_unset=True),
    }


def shard_name(document: Any) -> str | None:
    """`metadata.name` of a document not validated yet, when it is a string (else None)."""
    meta = document.get("metadata") if isinstance(document, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else None


def load_checked(document: Mapping[str, Any], previous: Any = None, previous_root: str = "previous") -> MultigresShard:
    """Validate a document and, when the previous spec is known, the update from it. Problems of the
    previous spec itself are reported under `previous_root` (where it came from)."""
    shard = load_shard(document)
    if previous is not None:
        errors = check_transition(load_spec(previous, root=previous_root), shard.spec)
        if errors:
            raise SpecError(errors)
    return shard


def duplicate_names(named: Iterable[tuple[str, MultigresShard]]) -> list[str]:
    """One line per MultigresShard name given more than once: the folder has one file per name, so
    one would silently replace the other."""
    sources: dict[str, list[str]] = {}
    for where, shard in named:
        sources.setdefault(shard.metadata.name, []).append(where)
    return [f"{' and '.join(wheres)}: MultigresShard {name!r} is defined {len(wheres)} times; names must be "
            "unique across the inputs" for name, wheres in sorted(sources.items()) if len(wheres) > 1]


def preview_objects(shard: MultigresShard, namespace: str) -> list[Manifest]:
    project_ref = shard.metadata.annotations.get(keys.ANN_PROJECT_REF)
    return render.manifests(render.desired_state(shard.spec, namespace, project_ref=project_ref))


def render_files(
    shards: Iterable[MultigresShard], default_namespace: str = "default", include: Include = "all",
) -> dict[str, str]:
    crs, previews = [], []
    for shard in shards:
        namespace = shard.metadata.namespace or default_namespace
        crs.append(shard_manifest(shard, namespace))
        if include != "crs":
            objects = preview_objects(shard, namespace)
            previews.append(output.folder(objects, prefix=f"preview/{shard.metadata.name}/"))
    top = output.folder(sorted(crs, key=lambda cr: cr["metadata"]["name"])) if include != "preview" else {}
    return output.merge_folders(top, *previews)
