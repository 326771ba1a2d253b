"""Which of the objects carrying a shard's labels belong to the MultigresShard driving the pass.

Labels can be copied by anyone who may create a pod or PVC in the namespace; ownership cannot be
taken over by copying them. An object is the shard's when its controller ownerReference names the
MultigresShard's uid with `blockOwnerDeletion: true` (as the engine has always written it): with the
OwnerReferencesPermissionEnforcement admission plugin, setting that needs `update` on
`multigresshards/finalizers`, so a reference copied by someone who may only create pods does not
count (`binding`). A PVC kept by whenDeleted=Retain deliberately has no ownerReference (the
garbage collector would delete it with the shard); it is the shard's when its ANN_OWNER_SHARD
annotation names the MultigresShard, or (upgrade from versions that did not write the annotation)
when one of the shard's own pods mounts it. Everything else with the shard's labels is foreign: the
planner never counts, patches, deletes or adopts it, and the status names it (ForeignObjects).

Without a MultigresShard (vars mode) there is no owner to compare with: every labelled object is
the shard's, as before. Secrets count only with the controller reference (the engine generates them
with it). Infrastructure objects (Services, ConfigMaps, ...) without any controller
stay visible: the planner adopts one only under a name it renders, and prunes only its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core import keys
from ..core.manifest import Manifest
from . import facts


def controller_ref(obj: Manifest) -> Manifest | None:
    refs: list[Manifest] = facts.meta(obj).get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref
    return None


def mounted_claims(pods: Iterable[Manifest]) -> set[str]:
    """The PVC names the pods mount."""
    out = set()
    for pod in pods:
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                out.add(claim)
    return out


def binding(ref: Manifest) -> bool:
    """A controller reference that may count as ownership: one that blocks the owner's deletion,
    which only someone allowed to set the owner's finalizers may write (admission plugin above)."""
    return ref.get("blockOwnerDeletion") is True


@dataclass(frozen=True)
class Owner:
    """The MultigresShard a pass is driven by."""

    name: str
    uid: str

    @classmethod
    def of(cls, cr: Manifest | None) -> Owner | None:
        if not cr or not facts.uid(cr):
            return None
        return cls(facts.name(cr), str(facts.uid(cr)))

    def controls(self, obj: Manifest) -> bool:
        ref = controller_ref(obj)
        return ref is not None and ref.get("uid") == self.uid and binding(ref)

    def owns(self, obj: Manifest, kind: str, claims: set[str]) -> bool:
        ref = controller_ref(obj)
        if ref is not None:
            return ref.get("uid") == self.uid and binding(ref)
        if kind in ("Pod", "Secret"):
            # The engine has always created pods and generated Secrets with the controller reference;
            # a Secret under a generated name that is not ours would hand the pods its content.
            return False
        if kind == "PersistentVolumeClaim":
            return facts.annotations(obj).get(keys.ANN_OWNER_SHARD) == self.name or facts.name(obj) in claims
        return True  # an unowned infrastructure object: adopted only under a name the engine renders


@dataclass(frozen=True)
class Split:
    pods: tuple[Manifest, ...]
    pvcs: tuple[Manifest, ...]
    others: Mapping[str, tuple[Manifest, ...]]
    foreign: tuple[Manifest, ...]


def split(owner: Owner | None, pods: Iterable[Manifest], pvcs: Iterable[Manifest],
          others: Mapping[str, Iterable[Manifest]]) -> Split:
    """The shard's objects by kind, and the foreign ones (each with its `kind` set)."""
    pods, pvcs = list(pods), list(pvcs)
    if owner is None:
        return Split(tuple(pods), tuple(pvcs), {k: tuple(v) for k, v in others.items()}, ())
    foreign: list[Manifest] = []

    def keep(objs: Iterable[Manifest], kind: str, claims: set[str]) -> tuple[Manifest, ...]:
        ours = []
        for obj in objs:
            if owner.owns(obj, kind, claims):
                ours.append(obj)
            else:
                foreign.append({**obj, "kind": obj.get("kind") or kind})
        return tuple(ours)

    our_pods = keep(pods, "Pod", set())
    claims = mounted_claims(our_pods)
    our_pvcs = keep(pvcs, "PersistentVolumeClaim", claims)
    our_others = {kind: keep(objs, kind, claims) for kind, objs in others.items()}
    return Split(our_pods, our_pvcs, our_others, tuple(foreign))


def rival_refs(foreign: Iterable[Manifest]) -> dict[str, str]:
    """name -> uid of the other MultigresShards that control foreign objects (to be confirmed live:
    anyone can write an ownerReference to a made-up uid)."""
    out = {}
    for obj in foreign:
        ref = controller_ref(obj)
        if ref and ref.get("kind") == keys.SHARD_KIND and str(ref.get("apiVersion", "")).startswith(
                f"{keys.API_GROUP}/") and ref.get("name") and ref.get("uid"):
            out[str(ref["name"])] = str(ref["uid"])
    return out


def describe(foreign: Iterable[Manifest], limit: int = 20) -> str:
    """`Pod x (controlled by MultigresShard other), PersistentVolumeClaim y (no owner)`, at most `limit`."""
    parts = []
    for obj in sorted(foreign, key=lambda o: (o.get("kind", ""), facts.name(o))):
        ref = controller_ref(obj)
        whose = f"controlled by {ref.get('kind')} {ref.get('name')}" if ref else "no controller reference"
        parts.append(f"{obj.get('kind')} {facts.name(obj)} ({whose})")
    more = len(parts) - limit
    return ", ".join(parts[:limit]) + (f" and {more} more" if more > 0 else "")
