"""Pure readers over pool-pod and MultigresShard objects (plain dicts as the API returns them).

A pool pod carries its whole topology in the multipooler container's args (contract §3.9), so the
agent can serve shards rendered from plain vars, without a MultigresShard.
"""

# Aliased: the plain future import binds the name `annotations`, which this module re-exports as a
# function (podinfo.annotations); type checkers would then take that name for the __future__ feature.
from __future__ import annotations as _postponed_annotations

import dataclasses
from dataclasses import dataclass
from typing import cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec import topology_address
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import s3_env_credentials
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import drain_annotations, facts

from ..dataplane.base import BackupLocationKind, DatabaseRegistration, PoolerId, ShardTopology

MULTIPOOLER_CONTAINER = "multipooler"


# The generic accessors are the engine's (module_utils/state/facts.py); re-exported under the agent's names.
meta, name, labels, annotations, uid = facts.meta, facts.name, facts.labels, facts.annotations, facts.uid
deleting = facts.is_terminating
condition_true = facts.condition_true


def namespace(obj: Manifest) -> str:
    return str(meta(obj).get("namespace", ""))


def has_finalizer(obj: Manifest, finalizer: str) -> bool:
    return finalizer in facts.finalizers(obj)


def drain_reading(pod: Manifest) -> drain_annotations.DrainReading:
    """The engine's reader (module_utils/state/drain_annotations.py): one rule for both sides."""
    return drain_annotations.read_state(annotations(pod))


def drain_state(pod: Manifest) -> keys.DrainState | None:
    """The known drain state; None for no drain and for an unknown value (which is left alone)."""
    return drain_reading(pod).state


def drain_under_way(pod: Manifest) -> bool:
    """A drain the agent still walks (requested, draining, acknowledged): not none, not finished."""
    return drain_state(pod) not in (None, keys.DrainState.READY_FOR_DELETION)


def epoch(text: str | None) -> float | None:
    """An RFC 3339 timestamp (an annotation's, a status field's) as seconds since the epoch."""
    stamp = facts.parse_time(text)
    return stamp.timestamp() if stamp is not None else None


def drain_since(pod: Manifest, now: float) -> float:
    """Since when the pod's drain is in its current state (its request time, else `now`)."""
    ann = annotations(pod)
    return epoch(ann.get(keys.ANN_DRAIN_STATE_SINCE)) or epoch(ann.get(keys.ANN_DRAIN_REQUESTED_AT)) or now


def containers_ready(pod: Manifest) -> bool:
    """ContainersReady (absent counts as ready, as the Go operator reads it; contract §3.4)."""
    cond = facts.condition(pod, "ContainersReady")
    return cond is None or cond.get("status") == "True"


def multipooler_flags(pod: Manifest) -> dict[str, str]:
    """`--flag=value` args of the multipooler container (a native sidecar in era A, a container later)."""
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if container.get("name") != MULTIPOOLER_CONTAINER:
            continue
        flags = {}
        for arg in [*(container.get("command") or []), *(container.get("args") or [])]:
            if arg.startswith("--") and "=" in arg:
                key, value = arg[2:].split("=", 1)
                flags[key] = value
        return flags
    return {}


@dataclass(frozen=True)
class PodTopology:
    """What one pool pod says about its shard (seen from its own cell) and its own pooler identity."""

    topology: ShardTopology
    service_id: str

    @property
    def cell(self) -> str:
        return self.topology.cells[0]

    @property
    def pooler_id(self) -> PoolerId:
        return PoolerId(self.cell, self.service_id)

    @property
    def shard_key(self) -> tuple[str, ...]:
        return self.topology.key


def global_addresses(value: str) -> tuple[str, ...]:
    """The normalised endpoints (one spelling per server, dialling order kept); () when unusable, so
    the pod or CR is left alone rather than grouped under a second spelling of its topology."""
    try:
        return topology_address.endpoints(value) if value.strip() else ()
    except topology_address.TopologyAddressError:
        return ()


def pod_topology(pod: Manifest) -> PodTopology | None:
    """None when the pod has no multipooler container with the topology flags."""
    f = multipooler_flags(pod)
    needed = ("topo-global-server-addresses", "topo-global-root", "cell", "database", "table-group", "shard")
    if not all(f.get(k) for k in needed):
        return None
    addresses = global_addresses(f["topo-global-server-addresses"])
    if not addresses:
        return None
    topo = ShardTopology(addresses, f["topo-global-root"], f["database"], f["table-group"], f["shard"], (f["cell"],))
    return PodTopology(topo, f.get("service-id") or naming.service_id(name(pod)))


def shard_topology(tops: list[PodTopology], extra_cells: tuple[str, ...] = ()) -> ShardTopology:
    cells = tuple(sorted({t.cell for t in tops} | set(extra_cells)))
    return dataclasses.replace(tops[0].topology, cells=cells)


# --- MultigresShard (field names of plugins/module_utils/spec/model.py, camelCase on the wire) ---------
# Pools, backup settings and the status are read through the engine's lenient readers (spec/reader.py).
def cr_cells(cr: Manifest) -> tuple[str, ...]:
    return ShardReader.of(cr).cells()


def cr_pod_list(cr: Manifest | None, field: str) -> set[str]:
    """Every pod name the CR lists in spec.pools.<pool>.<field> (decommission, fenced), all pools."""
    return ShardReader.of(cr).pods_listed(field)


def cr_shard_id(cr: Manifest) -> naming.ShardId:
    """The shard's four names as the engine reads them from the spec (with the CRD's defaults)."""
    spec = cr.get("spec") or {}
    return naming.ShardId(spec.get("clusterName", ""), spec.get("databaseName") or "postgres",
                          spec.get("tableGroupName") or "default", spec.get("shardName") or "0-inf")


def cr_topology(cr: Manifest) -> ShardTopology | None:
    spec = cr.get("spec") or {}
    topo = spec.get("globalTopoServer") or {}
    addresses = global_addresses(topo.get("address") or "")
    if not addresses:
        return None
    return ShardTopology(
        global_addresses=addresses,
        global_root=topo.get("rootPath") or "/multigres/global",
        database=spec.get("databaseName") or "postgres",
        tablegroup=spec.get("tableGroupName") or "default",
        shard=spec.get("shardName") or "0-inf",
        cells=cr_cells(cr),
    )


def cr_database(cr: Manifest, cells: tuple[str, ...]) -> DatabaseRegistration:
    spec = cr.get("spec") or {}
    backup = spec.get("backup") or {}
    s3 = backup.get("s3") or {}
    kind = BackupLocationKind.S3 if backup.get("type") == "s3" else BackupLocationKind.FILESYSTEM
    return DatabaseRegistration(
        name=spec.get("databaseName") or "postgres",
        cells=cells,
        durability_policy=spec.get("durabilityPolicy") or "AT_LEAST_2",
        backup_kind=kind,
        filesystem_path=(backup.get("filesystem") or {}).get("path") or "/backups",
        s3_bucket=s3.get("bucket") or "",
        s3_region=s3.get("region") or "",
        s3_endpoint=s3.get("endpoint") or "",
        s3_key_prefix=s3.get("keyPrefix") or "",
        s3_use_env_credentials=s3_env_credentials(s3.get("useEnvCredentials"), s3.get("credentialsSecret")),
    )


def cr_backup_threshold_s(cr: Manifest, default_s: float = 25 * 3600) -> float:
    text = ShardReader.of(cr).backup_health_threshold
    return parse_duration(text) if text else default_s


def parse_duration(text: str) -> float:
    """'25h', '90m', '1h30m', '45s' -> seconds."""
    total, num = 0.0, ""
    for ch in text:
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in "hms" and num:
            total += float(num) * {"h": 3600, "m": 60, "s": 1}[ch]
            num = ""
        else:
            raise ValueError(f"bad duration {text!r}")
    if num:
        raise ValueError(f"bad duration {text!r}")
    return total


def owner_shard_name(pod: Manifest) -> str | None:
    for ref in meta(pod).get("ownerReferences") or []:
        if ref.get("kind") == keys.SHARD_KIND and ref.get("apiVersion", "").startswith(keys.API_GROUP + "/"):
            return cast(str | None, ref.get("name"))
    return None
