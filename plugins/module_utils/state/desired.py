"""The contract between the renderer (what should exist) and the planner (what to do about it).

`render.desired_state(spec, ...)` returns a `Desired`; `plan.plan(desired, observed, ...)` consumes
it. Both are pure: no cluster access, no clocks, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from ..core.manifest import Manifest
from ..core.naming import ShardId
from ..spec.maintenance import Window
from .repository import Repository


class PVCPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


def backup_pvc_policy(pool_policies: Iterable[PVCPolicy]) -> PVCPolicy:
    """whenDeleted of the shared backup PVC, the only copy of the backups: Delete only when every
    pool's whenDeleted is Delete. The one rule for the renderer's ownerReference and the deletion."""
    policies = list(pool_policies)
    return PVCPolicy.DELETE if policies and all(p is PVCPolicy.DELETE for p in policies) else PVCPolicy.RETAIN


@dataclass(frozen=True)
class DesiredPool:
    """One pool in one cell: how many replicas, and how to build the pod and PVC for any index.

    `pod(i)` carries the `multigres.com/spec-hash` annotation; `pvc(i)` carries no ownerReference,
    which the planner adds or removes according to `when_deleted`.
    """

    pool: str
    cell: str
    replicas: int
    spec_hash: str
    storage_size: str
    when_scaled: PVCPolicy
    when_deleted: PVCPolicy
    pod: Callable[[int], Manifest] = field(compare=False, repr=False)
    pvc: Callable[[int], Manifest] = field(compare=False, repr=False)
    # spec.pools.<pool>.decommission: pod names to replace and drain (all cells of the pool).
    decommission: frozenset[str] = frozenset()
    # spec.pools.<pool>.fenced: pod names the agent keeps out of the synchronous set (never counted
    # as healthy replicas by the planner).
    fenced: frozenset[str] = frozenset()


@dataclass(frozen=True)
class GeneratedTLS:
    """pgBackRest TLS material the engine must create because the user chose `mode: auto`.

    Key material is never rendered: the apply step generates it inside the cluster's Secrets.
    `fingerprint` changes whenever the certificate's names change, which re-issues the leaf
    certificate from the same CA.
    """

    ca_secret: str
    tls_secret: str
    common_name: str
    dns_names: tuple[str, ...]
    fingerprint: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class GeneratedPassword:
    """The superuser password Secret the engine creates when the spec names none.

    Multigres v0.1.0 will not start without a password; the value is made once by the apply step,
    inside the Secret, and never rotated or shown (not in actions, diffs, logs or events)."""

    secret: str
    key: str
    labels: tuple[tuple[str, str], ...]
    # A clone (spec.backup.cloneFrom): (Secret, key) of the source's password, copied instead of made.
    copy_from: tuple[str, str] | None = None


@dataclass(frozen=True)
class BootstrapGuard:
    """The bootstrap guard of a shard whose pool pods carry the repository check (v0.1.0;
    state/bootstrap.py): spec.backup.bootstrap, the repository, and the backup PVC of a filesystem one."""

    mode: str  # keys.Bootstrap
    repository: Repository
    backup_pvc: str | None = None  # filesystem only


@dataclass(frozen=True)
class RestoreDrill:
    """spec.backup.verify of a shard that can run restore drills (v0.1.0, filesystem backups;
    state/drill.py): when, for how long, and the drill pod for a given backup id."""

    schedule: str | None
    timeout_s: float
    pod_name: str
    pod: Callable[[str], Manifest] = field(compare=False, repr=False)


@dataclass(frozen=True)
class CloneSource:
    """The live source of a clone (spec.backup.cloneFrom), as the engine found it this pass."""

    name: str  # "<namespace>/<name>" of the source MultigresShard
    backup_pvc: str  # the source's filesystem backup PVC
    password: tuple[str, str]  # (Secret, key) of the source's superuser password
    pool_selector: tuple[tuple[str, str], ...]  # labels of the source's pool pods (the copy runs beside them)
    backup_running: bool = False  # the source's agent runs a base backup now


@dataclass(frozen=True)
class CloneCopy:
    """The copy of a clone's source repository (state/clone.py, plan/clone.py): the source and the pod."""

    source: CloneSource
    pod_name: str
    pod: Manifest = field(compare=False, repr=False)


@dataclass(frozen=True)
class Desired:
    shard: ShardId
    namespace: str
    # Everything except pool pods and data PVCs: headless Services, PDBs, ConfigMaps, the backup
    # PVCs, MultiOrch Deployments and Services, pgBackRest TLS objects. Applied when they differ.
    objects: tuple[Manifest, ...]
    pools: tuple[DesiredPool, ...]
    generated_tls: GeneratedTLS | None = None
    generated_password: GeneratedPassword | None = None
    # spec.maintenanceWindows: when disruptive actions may start (spec/maintenance.py); empty = any time.
    windows: tuple[Window, ...] = ()
    bootstrap: BootstrapGuard | None = None
    drill: RestoreDrill | None = None
    # spec.backup.cloneFrom: the source ("<namespace>/<name>") and, while its repository must still be
    # copied, the copy (None once the copy is recorded: the source is not read any more).
    clone_from: str | None = None
    clone: CloneCopy | None = None

    @property
    def observes_secrets(self) -> bool:
        """Whether the planner needs the metadata of the shard's Secrets (never their data)."""
        return self.generated_tls is not None or self.generated_password is not None
