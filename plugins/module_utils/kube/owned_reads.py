"""Read one object of each kind a MultigresShard owns by name: what makes the operator-sdk Ansible
Operator watch those kinds.

Its API proxy (ansible-operator-plugins, internal/ansible/proxy) adds a watch on a kind for the
owner's controller only when an object of that kind is created with POST through the proxy, or
read by name through it (answered from its cache) while carrying an ownerReference to the owner
the proxy acts for. The engine creates with server-side apply (PATCH) and reads with lists, so
without these reads a deleted pod or Secret, or an agent's drain annotation, would wait for the next
periodic pass. One GET per kind, served from the proxy's cache; off unless asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.manifest import Manifest
from ..state import facts
from ..state.observed import Observed, kinds_to_list
from .snapshot import Reader


def owned_by(obj: Manifest, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in facts.meta(obj).get("ownerReferences") or ())


def read_one_of_each_kind(reader: Reader, namespace: str, observed: Observed, desired_objects: Iterable[Manifest],
                          uid: str) -> int:
    """GET, by name, the first object of each kind in `observed` owned by `uid`; returns how many."""
    # Secrets: the generated ones are listed (metadata only) but not among the rendered objects.
    api_versions = {"Pod": "v1", "PersistentVolumeClaim": "v1", "Secret": "v1",
                    **{k: v for v, k in kinds_to_list(desired_objects)}}
    pools = {"Pod": observed.pods, "PersistentVolumeClaim": observed.pvcs, **observed.others}
    reads = 0
    for kind, objs in pools.items():
        owned = next((o for o in objs if owned_by(o, uid)), None)
        if owned is None or kind not in api_versions:
            continue
        reader.get(api_versions[kind], kind, namespace, facts.meta(owned)["name"])
        reads += 1
    return reads
