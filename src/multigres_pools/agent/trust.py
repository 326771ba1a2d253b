"""What the agent may act for: pods controlled by a MultigresShard it sees, and topology records that
belong to the shard and namespace it is working on. Pure; the Kubernetes reads are the caller's.

Labels and the multipooler flags of a pod are written by whoever creates the pod, so neither proves
anything. A pod counts when its controller ownerReference names a MultigresShard of its namespace
with that uid (read live), or, for shards driven from vars (no MultigresShard), when it has no
controller at all and the agent allows unowned pods (`--allow-unowned-pods`, off by default in the
install bundle). A pooler record counts for a namespace when its database, table group and shard are
the topology's and its hostname (`<pod>.<service>.<namespace>.svc...`, as the renderer writes it)
names that namespace: a pod or MultigresShard in another namespace never removes another
namespace's records, whatever topology its flags or spec copy.
"""

from __future__ import annotations

from collections.abc import Callable

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube import snapshot
from ansible_collections.multigres.pools.plugins.module_utils.state import ownership

from ..dataplane.base import Pooler, ShardTopology


def record_namespace(rec: Pooler) -> str | None:
    """The namespace a record's hostname names; None for a bare hostname (nothing to compare)."""
    parts = rec.hostname.split(".")
    return parts[2] if len(parts) >= 3 and parts[2] else None


def record_belongs(rec: Pooler, topo: ShardTopology, namespace: str) -> bool:
    """The record is the topology's shard's and, if its hostname says so, of `namespace`."""
    if (rec.database, rec.tablegroup, rec.shard) != (topo.database, topo.tablegroup, topo.shard):
        return False
    ns = record_namespace(rec)
    return ns is None or ns == namespace


def parse_shard_selector(selector: str) -> list[tuple[str, str, str | None]]:
    """The terms of `--shard-selector` (ValueError for a set-based term, which is not supported)."""
    try:
        return snapshot.parse_selector(selector)
    except snapshot.SelectorError as exc:
        raise ValueError(f"{selector!r}: {exc}; use key=value, key!=value or key terms") from None


def shard_selected(shard: Manifest | None, selector: str) -> bool:
    """The MultigresShard matches the agent's --shard-selector (always, without one)."""
    if not selector:
        return True
    return shard is not None and snapshot.matches((shard.get("metadata") or {}).get("labels") or {},
                                                  parse_shard_selector(selector))


def shard_controller(pod: Manifest) -> tuple[str, str] | None:
    """(name, uid) of the MultigresShard the pod's controller reference names; only a reference that
    blocks the owner's deletion binds, as for the engine (ownership.binding)."""
    ref = ownership.controller_ref(dict(pod))
    if ref and ownership.binding(ref) and ref.get("kind") == keys.SHARD_KIND and ref.get("name") and ref.get("uid"):
        return str(ref["name"]), str(ref["uid"])
    return None


def pod_trusted(pod: Manifest, live_uid: Callable[[str], str | None], *, allow_unowned: bool) -> bool:
    """Whether the agent may act on `pod`: controlled by the live MultigresShard it names (`live_uid`
    maps a name in the pod's namespace to that CR's uid, None when there is none), or, with
    `allow_unowned`, controlled by nothing (a shard driven from vars)."""
    ref = ownership.controller_ref(dict(pod))
    if ref is None:
        return allow_unowned
    owner = shard_controller(pod)
    return owner is not None and live_uid(owner[0]) == owner[1]


def controlled_by(pod: Manifest | None, shard: Manifest) -> bool:
    """The pod's controller is `shard` (same uid)."""
    owner = shard_controller(pod) if pod is not None else None
    return owner is not None and owner[1] == (shard.get("metadata") or {}).get("uid")
