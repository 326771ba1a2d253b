"""One MultigresShard per Multigres shard and per S3 repository.

Multigres v0.1.0 serves one database, table group and shard (`postgres/default/0-inf`) per topology
root, and keeps one pgBackRest stanza per S3 key prefix. So a MultigresShard copied from another
and given a new name (or put in another namespace) with the same `globalTopoServer` would register
its pods as poolers of the *same* Multigres shard, and one with the same `backup.s3` location would
restore the other's backups and archive a second history into its repository. Each location is a
claim: the MultigresShard created first holds it (ties: namespace, then name), and any other that
names it is refused before it creates or changes anything (reconcile/shard.py).

What counts as the same location:
- a topology: the same root path and shard key on etcd endpoints that overlap. A host without a dot
  is a Service of the shard's own namespace (`etcd` in `db` is `etcd.db`), `etcd.db.svc` and
  `etcd.db.svc.cluster.local` are `etcd.db`, and the scheme does not matter;
- an S3 repository: the same endpoint (AWS's regional one when unset), bucket and repository path
  (`/<keyPrefix>/multigres`, slashes collapsed). Filesystem repositories are PVCs of the shard's own.

Read from the raw specs (a claimant's spec may not validate today and still have running pods).
Pure: the caller lists the claimants.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from ..spec import topology_address
from . import facts, repository

# The operator's namespaces (comma-separated, or `*` for every namespace), handed to the playbook runs
# so that they look for claimants where the operator's own decision looked.
ENV_CLAIM_NAMESPACES = "MULTIGRES_POOLS_CLAIM_NAMESPACES"
ALL_NAMESPACES = "*"

# The defaults of the fields a claim reads (spec/model.py; checked equal by tests/unit/plan/test_claims.py).
DEFAULT_ROOT_PATH = "/multigres/global"
DEFAULT_SHARD_KEY = ("postgres", "default", "0-inf")
_CLUSTER_SUFFIXES = (("svc",), ("svc", "cluster", "local"))


@dataclass(frozen=True)
class Claim:
    field: str  # the spec field that names the location
    shown: str  # the location, for the message
    root: tuple[str, ...]  # what must be equal ...
    endpoints: frozenset[str]  # ... and overlap (one element for a repository)
    harm: str  # what two MultigresShards there would do
    remedy: str  # the fields that give a shard a location of its own

    def overlaps(self, other: Claim) -> bool:
        return self.field == other.field and self.root == other.root and bool(self.endpoints & other.endpoints)


def _service_host(endpoint: str, namespace: str) -> str:
    """`etcd:2379` in `db` -> `etcd.db:2379`; IP addresses and other names stay as they are."""
    host, port = endpoint.removeprefix("https://").rsplit(":", 1)
    if host.startswith("[") or re.fullmatch(r"[0-9.]+", host):
        return f"{host}:{port}"
    labels = host.rstrip(".").split(".")
    if len(labels) == 1:
        labels.append(namespace)
    elif tuple(labels[2:]) in _CLUSTER_SUFFIXES:
        labels = labels[:2]
    return f"{'.'.join(labels)}:{port}"


def _topology(spec: Mapping[str, Any], namespace: str) -> Claim | None:
    topo = spec.get("globalTopoServer") or {}
    try:
        endpoints = topology_address.endpoints(str(topo.get("address") or ""))
    except topology_address.TopologyAddressError:
        return None  # refused by the model anyway: it cannot start a pod
    root = str(topo.get("rootPath") or DEFAULT_ROOT_PATH)
    fields = ("databaseName", "tableGroupName", "shardName")
    key = tuple(str(spec.get(f) or d) for f, d in zip(fields, DEFAULT_SHARD_KEY, strict=True))
    hosts = frozenset(_service_host(e, namespace) for e in endpoints)
    return Claim("spec.globalTopoServer", f"topology {','.join(sorted(hosts))} root {root} (shard {'/'.join(key)})",
                 (root, *key), hosts, harm="be one Multigres shard, their pods poolers of the same cohort",
                 remedy="globalTopoServer.rootPath (or topology etcd)")


def _repository(spec: Mapping[str, Any]) -> Claim | None:
    backup = spec.get("backup") or {}
    s3 = backup.get("s3") or {}
    if backup.get("type") != "s3" or not s3.get("bucket"):
        return None
    endpoint = str(s3.get("endpoint") or f"s3.{s3.get('region') or ''}.amazonaws.com").lower()
    endpoint = endpoint.removeprefix("https://").removeprefix("http://").rstrip("/")
    path = re.sub("/+", "/", repository.s3_path(s3.get("keyPrefix")))
    bucket = str(s3["bucket"])
    return Claim("spec.backup.s3", f"S3 repository s3://{bucket}{path} at {endpoint}", (bucket, path),
                 frozenset({endpoint}),
                 harm="restore each other's backups and archive two histories into one repository",
                 remedy="backup.s3.keyPrefix (or bucket)")


def claims(spec: Mapping[str, Any], namespace: str) -> tuple[Claim, ...]:
    """The locations a MultigresShard's spec (raw, camelCase) names."""
    return tuple(c for c in (_topology(spec, namespace), _repository(spec)) if c is not None)


def _seniority(shard: Manifest) -> tuple[str, str, str]:
    meta = facts.meta(shard)
    return str(meta.get("creationTimestamp") or ""), str(meta.get("namespace") or ""), facts.name(shard)


def conflicts(shard: Manifest, claimants: Iterable[Manifest]) -> list[str]:
    """Why `shard` may not use what its spec names: one message per location an older MultigresShard
    among `claimants` holds (field path first). `claimants` may include `shard` itself."""
    namespace = str(facts.meta(shard).get("namespace") or "")
    mine = claims(shard.get("spec") or {}, namespace)
    if not mine:
        return []
    me = _seniority(shard)
    out: dict[str, str] = {}
    for other in sorted(claimants, key=_seniority):
        if facts.uid(other) == facts.uid(shard) or _seniority(other) >= me:
            continue
        theirs = claims(other.get("spec") or {}, str(facts.meta(other).get("namespace") or ""))
        for claim in mine:
            if claim.field in out or not any(claim.overlaps(t) for t in theirs):
                continue
            holder = f"{facts.meta(other).get('namespace')}/{facts.name(other)}"
            out[claim.field] = (
                f"{claim.field}: the {claim.shown} is already {keys.SHARD_KIND} {holder}'s (created earlier); "
                f"two MultigresShards there would {claim.harm}. Give this one its own {claim.remedy}, "
                f"or delete {holder} first")
    return list(out.values())


def scope(value: str | None) -> tuple[str, ...]:
    """`MULTIGRES_POOLS_CLAIM_NAMESPACES` (or the module argument) as namespaces; ("*",) is every one."""
    names = tuple(dict.fromkeys(p.strip() for p in (value or "").split(",") if p.strip()))
    return (ALL_NAMESPACES,) if ALL_NAMESPACES in names else names
