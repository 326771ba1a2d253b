"""Object names, computed exactly as the Go multigres operator computes them (contract §3.5).

Matching the Go operator byte for byte lets either tool recognise the other's pods, and keeps the
multipooler's service id (derived from the pod name) stable across tools.
"""

from __future__ import annotations

from dataclasses import dataclass

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_HASH_LEN = 8


@dataclass(frozen=True)
class Constraint:
    max_length: int
    first_char_letter_only: bool


DEFAULT = Constraint(253, first_char_letter_only=False)
SERVICE = Constraint(63, first_char_letter_only=True)
STATEFULSET = Constraint(52, first_char_letter_only=True)
POD = Constraint(60, first_char_letter_only=True)


def fnv1a32(data: bytes, seed: int = _FNV_OFFSET) -> int:
    h = seed
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def hash_parts(*parts: str) -> str:
    """FNV-1a-32 over each part followed by a NUL byte, as 8 lowercase hex characters."""
    h = _FNV_OFFSET
    for part in parts:
        h = fnv1a32(part.encode() + b"\x00", h)
    return f"{h:08x}"


def _sanitize(part: str) -> str:
    out = []
    for ch in part:
        if ch.isascii() and (ch.islower() or ch.isdigit() or ch == "-"):
            out.append(ch)
        elif ch.isascii() and ch.isupper():
            out.append(ch.lower())
        else:
            out.append("-")
    return "".join(out)


def _valid_first(ch: str, cons: Constraint) -> bool:
    if ch.isascii() and ch.islower():
        return True
    return not cons.first_char_letter_only and ch.isascii() and ch.isdigit()


def join(cons: Constraint, *parts: str) -> str:
    """JoinWithConstraints: sanitise, join with '-', append the hash, truncate with '---'."""
    if cons.max_length < 12:
        raise ValueError(f"max length {cons.max_length} is below the minimum of 12")
    digest = hash_parts(*parts)
    cleaned = [_sanitize(p) for p in parts]
    if cleaned and (not cleaned[0] or not _valid_first(cleaned[0][0], cons)):
        cleaned[0] = "x" + cleaned[0]
    joined = "-".join(cleaned)
    if len(joined) + 1 + _HASH_LEN <= cons.max_length:
        return f"{joined}-{digest}"
    keep = cons.max_length - _HASH_LEN - 3
    return f"{joined[:keep]}---{digest}"


@dataclass(frozen=True)
class ShardId:
    """The four names that identify a shard; every object name starts from these."""

    cluster: str
    database: str
    tablegroup: str
    shard: str

    @property
    def parts(self) -> tuple[str, str, str, str]:
        return (self.cluster, self.database, self.tablegroup, self.shard)


def pool_base(sid: ShardId, pool: str, cell: str) -> str:
    return join(POD, *sid.parts, "pool", pool, cell)


def pod_name(sid: ShardId, pool: str, cell: str, index: int) -> str:
    return f"{pool_base(sid, pool, cell)}-{index}"


def data_pvc_name(sid: ShardId, pool: str, cell: str, index: int) -> str:
    return f"data-{pod_name(sid, pool, cell, index)}"


def headless_service_name(sid: ShardId, pool: str, cell: str) -> str:
    return join(SERVICE, *sid.parts, "pool", pool, cell, "headless")


def pdb_name(sid: ShardId, pool: str, cell: str) -> str:
    return join(SERVICE, *sid.parts, "pool", pool, cell, "pdb")


def backup_pvc_name(sid: ShardId, cell: str) -> str:
    """Era A: one filesystem backup PVC per cell (the Go operator's layout)."""
    return join(SERVICE, "backup-data", *sid.parts, cell)


def shard_backup_pvc_name(sid: ShardId) -> str:
    """v0.1.0: one filesystem backup PVC for the whole shard, since every pooler of the shard must
    see the one pgBackRest repository named by the Database record's backup_location."""
    return join(SERVICE, "backup-data", *sid.parts)


def restore_drill_pod_name(sid: ShardId) -> str:
    """The throwaway pod of the shard's restore drill (one at a time)."""
    return join(POD, *sid.parts, "restore-drill")


def clone_copy_pod_name(sid: ShardId) -> str:
    """The throwaway pod that copies a clone's source repository into its backup PVC (plan/clone.py)."""
    return join(POD, *sid.parts, "clone-copy")


def multiorch_deployment_name(sid: ShardId, cell: str) -> str:
    return join(DEFAULT, *sid.parts, "multiorch", cell)


def multiorch_service_name(sid: ShardId, cell: str) -> str:
    return join(SERVICE, *sid.parts, "multiorch", cell)


def multigateway_deployment_name(sid: ShardId, cell: str) -> str:
    return join(DEFAULT, *sid.parts, "multigateway", cell)


def multigateway_service_name(sid: ShardId, cell: str) -> str:
    return join(SERVICE, *sid.parts, "multigateway", cell)


def shard_resource_name(sid: ShardId) -> str:
    return join(DEFAULT, *sid.parts)


def pg_hba_configmap_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-pg-hba"


def postgres_config_configmap_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-postgres-config"


def network_policy_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-network-policy"


def password_secret_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-postgres-password"


def pgbackrest_ca_secret_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-pgbackrest-ca"


def pgbackrest_tls_secret_name(sid: ShardId) -> str:
    return f"{shard_resource_name(sid)}-pgbackrest-tls"


def service_id(pod: str) -> str:
    """The multipooler --service-id for a pod: 'p-' plus the hash of the pod name."""
    return f"p-{hash_parts(pod)}"


def pooler_fqdn(pod: str, headless_service: str, namespace: str, cluster_domain: str) -> str:
    """`<pod>.<headless svc>.<ns>.svc.<domain>`: the DNS name of a pool pod (`hostname` + `subdomain`),
    which v0.1.0 multipoolers register as their `--hostname`. `pod` may be `*` (a certificate SAN)
    or `$(POD_NAME)` (expanded by the kubelet from the downward API)."""
    return f"{pod}.{headless_service}.{namespace}.svc.{cluster_domain}"


def topo_path(root: str, *parts: str) -> str:
    """An etcd key as Go path.Join builds it (contract §2.2): one leading slash, none trailing."""
    segments = [seg for p in (root, *parts) for seg in p.split("/") if seg]
    return "/" + "/".join(segments)


def pooler_key(root: str, cell: str, svc_id: str) -> str:
    return topo_path(root, "poolers", f"multipooler-{cell}-{svc_id}", "Pooler")


def poolers_prefix(root: str) -> str:
    return topo_path(root, "poolers")


def orchestrators_prefix(root: str) -> str:
    """Where multiorchs register (v0.1.0 `<cellRoot>/orchs/multiorch-<cell>-<name>/Orch`)."""
    return topo_path(root, "orchs")


def cell_key(root: str, cell: str) -> str:
    return topo_path(root, "cells", cell, "Cell")


def database_key(root: str, database: str) -> str:
    return topo_path(root, "databases", database, "Database")
