"""The MultigresShard API: one pydantic model holding every field, default, doc and rule.

Field names follow the Go operator's Shard spec where they overlap (contract §3.7). The CRD schema
and its CEL rules are generated from these classes by `install/crd.py`; Python runs the same rules through
pydantic (`load_shard`) and `check_transition` (pools and cells append-only, cell topology and
storage size guarded against changes the running pods cannot follow).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)

from ..core import conditions, keys, naming
from . import cron, inputs, quantity, topology_address
from .rules import (
    Rule,
    SpecModel,
    TransitionRule,
    format_validation_error,
    required_when,
    transition_errors,
    wire_value,
)
from .security import (
    LabelKey,
    LabelValue,
    ObjectName,
    Security,
    owned_keys_rule,
    postgres_config_rules,
)

# --- scalar types --------------------------------------------------------------------------------
_DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"

# An integer as the API server takes one: `true` or "3" is refused, not read as 1 or 3.
Integer = Annotated[int, Strict()]
DnsLabel = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=63)]
CellName = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=63)]
PoolName = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=63)]
Image = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^\S+$")]


def _quantity(text: str) -> str:
    quantity.parse(text)
    return text


Quantity = Annotated[str, StringConstraints(pattern=quantity.PATTERN, max_length=64), AfterValidator(_quantity)]


def _cron(text: str) -> str:
    why = cron.problem(text)
    if why is not None:
        raise ValueError(why)
    return text


Cron = Annotated[str, StringConstraints(pattern=r"^(\S+\s+){4}\S+$", max_length=128), AfterValidator(_cron)]
Duration = Annotated[str, StringConstraints(pattern=r"^([0-9]+(\.[0-9]+)?(h|m|s))+$", max_length=32)]
GucName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_.]*$", max_length=128)]
# A Go time.Duration as Multigres flags take it, limited to the units people write: 500ms, 2s, 1m30s.
GO_DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
GoDuration = Annotated[str, StringConstraints(pattern=GO_DURATION_PATTERN, max_length=32)]
_GO_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_GO_DURATION_UNIT = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}


def go_duration_seconds(text: str) -> Decimal:
    """Seconds in a `GoDuration` string (already matched by its pattern)."""
    return sum((Decimal(n) * _GO_DURATION_UNIT[u] for n, u in _GO_DURATION_PART.findall(text)), Decimal(0))


LogLevel = Literal["debug", "info", "warn", "error"]
PullPolicy = Literal["Always", "IfNotPresent", "Never"]
AccessMode = Literal["ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod", "ReadOnlyMany"]
PVCPolicyName = Literal["Retain", "Delete"]

# The durability policies era-A Multigres understands (contract §2.7); the agent parses the same pattern.
DURABILITY_POLICY_PATTERN = r"^(MULTI_CELL_)?AT_LEAST_([1-9][0-9]?)$"

DEFAULT_EXPORTER_IMAGE = "quay.io/prometheuscommunity/postgres-exporter:v0.18.1"


@dataclass(frozen=True)
class ReleaseImages:
    """The images one Multigres version ships: `multigres` (multipooler, multiorch, multigateway)
    and `pgctld` (pgctld, PostgreSQL, pgBackRest)."""

    multigres: str
    pgctld: str


# The one table of default images: an unset `spec.images.<component>` follows `spec.multigres.version`.
RELEASE_IMAGES: dict[keys.MultigresVersion, ReleaseImages] = {
    keys.MultigresVersion.V0_1_0: ReleaseImages(
        "ghcr.io/multigres/multigres:v0.1.0", "ghcr.io/multigres/pgctld:v0.1.0"),
    keys.MultigresVersion.ERA_A: ReleaseImages(
        "ghcr.io/multigres/multigres:sha-d782aa0", "ghcr.io/multigres/pgctld:sha-d782aa0"),
}


@dataclass(frozen=True)
class ContainerImages:
    """The image of every container, the version's defaults filled in (`MultigresShardSpec.container_images`)."""

    multipooler: str
    multiorch: str
    multigateway: str
    postgres: str
    postgres_exporter: str


def _unique(values: list[str]) -> list[str]:
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"duplicate entries: {', '.join(dupes)}")
    return values


# An affinity is copied verbatim into every pod of a pool; a real one holds a few dozen values.
MAX_AFFINITY_VALUES = 500


def _bounded_affinity(value: dict[str, Any]) -> dict[str, Any]:
    if inputs.count_values(value, MAX_AFFINITY_VALUES) > MAX_AFFINITY_VALUES:
        raise ValueError(f"more than {MAX_AFFINITY_VALUES:,} values: an affinity is copied into every pod")
    return value


Affinity = Annotated[dict[str, Any], AfterValidator(_bounded_affinity)]


# A list without duplicates: a `set` list in the CRD (the apiserver rejects duplicates too).
CellList = Annotated[
    list[CellName], AfterValidator(_unique), Field(json_schema_extra={"x-kubernetes-list-type": "set"}),
]


def _size_grows(old: Storage, new: Storage) -> bool:
    return quantity.parse(new.size) >= quantity.parse(old.size)


# --- leaves --------------------------------------------------------------------------------------
class Storage(SpecModel):
    """A persistent volume claim request."""

    __rules__: ClassVar = (
        Rule(
            name="storage-size-positive", cel="quantity(self.size).isGreaterThan(quantity('0'))",
            message="storage size must be greater than zero",
            check=lambda s: quantity.parse(s.size) > 0, field_path=".size",
        ),
    )
    __transitions__: ClassVar = (
        TransitionRule(
            name="storage-grow-only",
            cel="quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0",
            message="storage size can only grow: Kubernetes cannot shrink a bound volume",
            check=_size_grows, field_path=".size",
        ),
    )

    size: Quantity = Field("1Gi", description="Requested size of each volume (grow-only).")
    class_: ObjectName | None = Field(
        None, alias="class", description="StorageClass name; the cluster default when unset.",
    )
    access_modes: list[AccessMode] = Field(
        ["ReadWriteOnce"], min_length=1, max_length=4, description="PVC access modes.",
    )


class BackupStorage(Storage):
    size: Quantity = Field("10Gi", description="Requested size of the shared backup volume (grow-only).")


class Resources(SpecModel):
    """Container resource requests and limits (Kubernetes quantities)."""

    requests: dict[Annotated[str, StringConstraints(max_length=63)], Quantity] = Field(
        {}, max_length=8, description="Resource requests, e.g. {cpu: 500m, memory: 1Gi}.",
    )
    limits: dict[Annotated[str, StringConstraints(max_length=63)], Quantity] = Field(
        {}, max_length=8, description="Resource limits.",
    )


class ContainerSettings(SpecModel):
    resources: Resources = Field({}, validate_default=True, description="Requests and limits of this container.")


def _positive_interval(name: str, wire: str, why: str = "") -> Rule:
    """`wire`, a Go duration, is unset or more than zero; `why` says what zero would do, where it matters."""
    return Rule(
        name=f"{name}-positive", cel=f"!has(self.{wire}) || duration(self.{wire}) > duration('0s')",
        message=f"{wire} must be greater than zero" + (f": {why}" if why else ""),
        check=lambda m: wire_value(m, wire) is None or go_duration_seconds(wire_value(m, wire)) > 0,
        field_path=f".{wire}",
    )


MAX_DRAIN_GRACE_S = 20  # within multipooler's 30 s --onterm-timeout, with time left to stop PostgreSQL
# Above kubeadm's cluster DNS ttl (30 s), the largest one people run; each second is paid by every replacement.
MAX_PRE_STOP_DELAY_S = 60


class MultiPoolerSettings(ContainerSettings):
    __rules__: ClassVar = (
        Rule(name="connection-drain-grace-period-bounded",
             cel=f"duration(self.connectionDrainGracePeriod) <= duration('{MAX_DRAIN_GRACE_S}s')",
             message=f"connectionDrainGracePeriod must be at most {MAX_DRAIN_GRACE_S}s",
             check=lambda m: go_duration_seconds(wire_value(m, "connectionDrainGracePeriod")) <= MAX_DRAIN_GRACE_S,
             field_path=".connectionDrainGracePeriod"),
        # One client gone mid-transaction (its release refused by the stopping pooler) would then hold the
        # primary's shutdown for --onterm-timeout (30 s).
        _positive_interval("connection-drain-grace-period", "connectionDrainGracePeriod",
                           "Multigres v0.1.0 reads 0 as no bound (the pooler would wait for every open "
                           "transaction before it stops)"),
        Rule(name="pre-stop-delay-bounded",
             cel=f"duration(self.preStopDelay) <= duration('{MAX_PRE_STOP_DELAY_S}s')",
             message=f"preStopDelay must be at most {MAX_PRE_STOP_DELAY_S}s",
             check=lambda m: go_duration_seconds(wire_value(m, "preStopDelay")) <= MAX_PRE_STOP_DELAY_S,
             field_path=".preStopDelay"),
    )

    connection_drain_grace_period: GoDuration = Field(
        "200ms", description="multipooler --connpool-drain-grace-period (Multigres v0.1.0): when the pod stops, how "
                             "long statements already running may finish before the pooler closes their "
                             "connections. v0.1.0 refuses every new request from SIGTERM on (a transaction's next "
                             "statement and its COMMIT included), so a transaction open then is rolled back when "
                             "this ends, however long it is; a primary's replacement waits for it before the "
                             "election starts, so every second here is a second without writes (Multigres' "
                             "default is 3s). More than 0s (v0.1.0 reads 0 as no bound), at most 20s.",
    )
    pre_stop_delay: GoDuration = Field(
        "6s", description="Multigres v0.1.0: after its pod's deletion, how long multipooler goes on serving before "
                          "it is told to stop. The pod's name leaves DNS when its drain ends (or at the deletion), "
                          "and multiorch and the multigateway look the name up again when its connections break: "
                          "stopping before every DNS cache has forgotten the old address sends them to it for 30 s "
                          "more (gRPC's floor between lookups), and a successor with that name, or the new primary "
                          "that pod becomes later, is unreachable for them that long. Above the cluster DNS ttl (5s "
                          "by default, 30s in kubeadm's Corefile); every pod's replacement waits it once. 0s turns "
                          "it off; at most 60s.",
    )

    @property
    def pre_stop_delay_seconds(self) -> Decimal:
        return go_duration_seconds(self.pre_stop_delay)


class Toleration(SpecModel):
    """A pod toleration (same fields as core/v1 Toleration)."""

    key: Annotated[str, StringConstraints(max_length=317)] | None = Field(
        None, description="Taint key to tolerate; unset with operator Exists tolerates every taint.")
    operator: Literal["Exists", "Equal"] | None = Field(
        None, description="Exists: any value of the key; Equal (the default): the taint's value must equal `value`.")
    value: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="Taint value to match when operator is Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="Taint effect to tolerate; every effect when unset.")
    toleration_seconds: Integer | None = Field(
        None, description="With effect NoExecute: seconds the pod stays on a node after the taint appears "
                          "(forever when unset).")


class LocalObjectReference(SpecModel):
    name: ObjectName = Field(description="Name of an object in the shard's namespace.")


class SecretKeyRef(SpecModel):
    name: ObjectName = Field(description="Secret name (in the shard's namespace).")
    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        "password", description="Key inside the Secret.",
    )


class ConfigMapKeyRef(SpecModel):
    name: ObjectName = Field(description="ConfigMap name (in the shard's namespace).")
    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        "postgresql.conf.tmpl", description="Key holding the postgresql.conf template.",
    )


class PVCDeletionPolicy(SpecModel):
    """What happens to data PVCs when the shard is deleted or a pool scales down."""

    when_deleted: PVCPolicyName = Field("Retain", description="Shard deleted: keep (Retain) or garbage-collect.")
    when_scaled: PVCPolicyName = Field("Delete", description="Replica removed by scale-down: delete or keep.")


class PVCDeletionPolicyOverride(SpecModel):
    """Per-pool override; each unset field falls back to the shard's `pvcDeletionPolicy`."""

    when_deleted: PVCPolicyName | None = Field(
        None, description="This pool's whenDeleted (Retain or Delete); the shard's when unset.")
    when_scaled: PVCPolicyName | None = Field(
        None, description="This pool's whenScaled (Retain or Delete); the shard's when unset.")


# --- images, topology, logs ----------------------------------------------------------------------
class Images(SpecModel):
    """Container images. An unset Multigres image is the one `spec.multigres.version` ships
    (docs/api.md, "Multigres versions"), so changing the version alone moves every image with it."""

    image_pull_policy: PullPolicy = Field("IfNotPresent", description="Pull policy for every container.")
    image_pull_secrets: list[LocalObjectReference] = Field([], max_length=8, description="Pull secrets.")
    multipooler: Image | None = Field(
        None, description="Image running `multipooler`; default: the version's multigres image.")
    multiorch: Image | None = Field(
        None, description="Image running `multiorch`; default: the version's multigres image.")
    multigateway: Image | None = Field(
        None, description="Image running `multigateway`; default: the version's multigres image.")
    postgres: Image | None = Field(
        None, description="Image running pgctld and PostgreSQL; default: the version's pgctld image.")
    postgres_exporter: Image = Field(DEFAULT_EXPORTER_IMAGE, description="Prometheus postgres-exporter image.")


class MultigresRelease(SpecModel):
    """Which Multigres contract the shard's binaries speak. Declared, never guessed: nothing probes
    the images. It picks the pod layout, the flags, the default images and the agent's data-plane
    adapter."""

    version: keys.MultigresVersion = Field(
        keys.DEFAULT_MULTIGRES_VERSION,
        description="`v0.1.0`: the Multigres release (pgctld as a native sidecar, multipooler as the "
                    "main container, v0.1.0 flags and consensus RPCs). `d782aa06`: the pre-release "
                    "build of era A (multipooler as the sidecar, era-A RPCs). Changing it on a live "
                    "shard rolls every pod; see docs/api.md.",
    )


class GlobalTopoServer(SpecModel):
    address: Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^\S+$"),
                       AfterValidator(topology_address.normalize)] = Field(
        description="Global topology etcd client endpoint(s), comma-separated `host:port` (or "
                    "`https://host:port`), dialled in the order given. Normalised to one spelling: the "
                    "host lowercased, `http://` dropped, duplicates removed, so `ETCD:2379,http://etcd:2379` "
                    "is `etcd:2379`. Two shards whose lists name the same endpoints in any order share one "
                    "topology. A missing port, an empty endpoint or a bad host is refused.",
    )
    root_path: Annotated[str, StringConstraints(pattern=r"^/\S*$", max_length=512)] = Field(
        "/multigres/global", description="Root key of the global topology in etcd.",
    )
    implementation: Literal["etcd2"] = Field("etcd2", description="Topology backend.")


class LogLevels(SpecModel):
    """--log-level of each Multigres component."""

    pgctld: LogLevel = Field("info", description="Log level of pgctld (the PostgreSQL container).")
    multipooler: LogLevel = Field("info", description="Log level of multipooler.")
    multiorch: LogLevel = Field("info", description="Log level of multiorch.")
    multigateway: LogLevel = Field("info", description="Log level of multigateway.")


class PostgresExporter(SpecModel):
    enabled: bool = Field(
        True, description="Run the postgres-exporter container in every pool pod (port 9187, with "
                          "prometheus.io scrape annotations). Turn off where nothing scrapes it.",
    )


class Monitoring(SpecModel):
    postgres_exporter: PostgresExporter = Field(
        {}, validate_default=True, description="The postgres-exporter sidecar of pool pods.",
    )


# --- pools ---------------------------------------------------------------------------------------
class Pool(SpecModel):
    """One pool: `replicasPerCell` pods (one PVC each) in every listed cell."""

    __transitions__: ClassVar = (
        TransitionRule(
            name="cells-append-only",
            cel="oldSelf.cells.all(c, c in self.cells)",
            message="cells are append-only within a pool: removing or renaming a cell would orphan its pods",
            check=lambda old, new: set(old.cells) <= set(new.cells), field_path=".cells",
        ),
    )

    type: Literal["readWrite"] = Field("readWrite", description="Pool type; only readWrite exists today.")
    cells: CellList = Field(min_length=1, max_length=10, description="Cells this pool runs in (append-only).")
    replicas_per_cell: Integer = Field(3, ge=1, le=32, description="Pods (and data PVCs) per cell.")
    storage: Storage = Field({}, validate_default=True, description="Data volume of each pod.")
    postgres: ContainerSettings = Field({}, validate_default=True, description="The pgctld/PostgreSQL container.")
    multipooler: MultiPoolerSettings = Field({}, validate_default=True, description="The multipooler container.")
    affinity: Affinity | None = Field(None, description="Pod affinity (core/v1 Affinity), verbatim.")
    tolerations: list[Toleration] = Field([], max_length=32, description="Pod tolerations.")
    node_selector: dict[LabelKey, LabelValue] = Field(
        {}, max_length=16, description="Extra nodeSelector, merged under the cell's topology labels.",
    )
    fs_group: Integer | None = Field(
        999, ge=1, description="Pod fsGroup; also runAsUser/runAsGroup of pgctld and multipooler.",
    )
    pvc_deletion_policy: PVCDeletionPolicyOverride | None = Field(
        None, description="Overrides the shard's pvcDeletionPolicy for this pool.",
    )
    decommission: Annotated[
        list[ObjectName], AfterValidator(_unique), Field(json_schema_extra={"x-kubernetes-list-type": "set"}),
    ] = Field(
        [], max_length=32,
        description="Pods of this pool to replace: each gets a new pod at a new index first, then is drained "
                    "(the scale-down drain) and deleted with its data PVC. Names that are not pods of this pool "
                    "are reported (DecommissionValid=False) and ignored; names already gone are no-ops.",
    )
    fenced: Annotated[
        list[ObjectName], AfterValidator(_unique), Field(json_schema_extra={"x-kubernetes-list-type": "set"}),
    ] = Field(
        [], max_length=32,
        description="Pods of this pool to fence (Multigres v0.1.0): the agent takes each out of the synchronous "
                    "set and stops its WAL receiver, without deleting it; removing the name unfences it. The "
                    "primary, and a standby the durability policy still needs, are refused (pod condition "
                    "Fenced=False, shard condition FenceRefused). A fenced pod is never counted as a healthy "
                    "replica, nor drained or replaced for being fenced.",
    )


class CellDeployment(SpecModel):
    """A Deployment (and Service) in each cell."""

    __rules__: ClassVar[tuple[Rule, ...]] = (
        owned_keys_rule("pod-labels-not-owned", "podLabels", "podLabels", keys.OWNED_LABEL_KEYS),
        owned_keys_rule("pod-annotations-not-owned", "podAnnotations", "podAnnotations"),
    )

    replicas: Integer = Field(1, ge=1, le=5, description="Replicas per cell.")
    cells: CellList = Field(
        [], max_length=10, description="Cells running one; empty means every cell of every pool.",
    )
    resources: Resources = Field({}, validate_default=True, description="Container resources.")
    affinity: Affinity | None = Field(None, description="Pod affinity, verbatim.")
    tolerations: list[Toleration] = Field([], max_length=32, description="Pod tolerations.")
    pod_annotations: dict[Annotated[str, StringConstraints(max_length=317)], str] = Field(
        {}, max_length=32, description="Extra pod annotations.",
    )
    pod_labels: dict[LabelKey, LabelValue] = Field({}, max_length=32, description="Extra pod labels.")


MAX_FAILOVER_JITTER_S = 60  # multiorch v0.1.0's maxAllowedJitter (recovery_grace_period.go)


class MultiOrch(CellDeployment):
    __rules__: ClassVar = (
        *CellDeployment.__rules__,
        _positive_interval("pooler-health-check-interval", "poolerHealthCheckInterval"),
        _positive_interval("recovery-cycle-interval", "recoveryCycleInterval"),
        _positive_interval("failover-grace-period", "failoverGracePeriod"),
        Rule(
            name="failover-jitter-at-most-a-minute",
            cel="!has(self.failoverGracePeriodMaxJitter) "
                f"|| duration(self.failoverGracePeriodMaxJitter) <= duration('{MAX_FAILOVER_JITTER_S}s')",
            message=f"failoverGracePeriodMaxJitter must be at most {MAX_FAILOVER_JITTER_S}s (multiorch v0.1.0 cuts "
                    "anything longer to that)",
            check=lambda m: (wire_value(m, "failoverGracePeriodMaxJitter") is None
                             or go_duration_seconds(wire_value(m, "failoverGracePeriodMaxJitter"))
                             <= MAX_FAILOVER_JITTER_S),
            field_path=".failoverGracePeriodMaxJitter",
        ),
    )

    pooler_health_check_interval: GoDuration | None = Field(
        None, description="multiorch --pooler-health-check-interval (Go duration such as 500ms or 5s); "
                          "Multigres' default (5s) when unset.",
    )
    recovery_cycle_interval: GoDuration | None = Field(
        None, description="multiorch --recovery-cycle-interval (Go duration); Multigres' default (1s) when unset.",
    )
    failover_grace_period: GoDuration | None = Field(
        None, description="multiorch --leader-failover-grace-period-base (Go duration): how long a primary that "
                          "looks dead must stay so before multiorch fails it over; Multigres' default (4s) when "
                          "unset. Longer keeps a busy primary on a loaded node from being failed over while it "
                          "still serves, at the cost of that much more write downtime when it really is gone; "
                          "planned handovers do not wait for it (the agent expires it).",
    )
    failover_grace_period_max_jitter: GoDuration | None = Field(
        None, description="multiorch --leader-failover-grace-period-max-jitter (Go duration, 0s for none): up to "
                          "this much is added at random to failoverGracePeriod, so two multiorchs seldom act at "
                          "once; Multigres' default (8s) when unset.",
    )


class FailoverBuffer(SpecModel):
    __rules__: ClassVar = (_positive_interval("failover-buffer-window", "window"),)

    enabled: bool = Field(
        False, description="multigateway --buffer-enabled: a statement the old primary refuses during a "
                           "primary change (planned failover in progress, MTF01, or a read-only transaction, "
                           "25006) waits for the new primary instead of failing. New connections that fail "
                           "while the old primary's pooler is unreachable are not covered.",
    )
    window: GoDuration | None = Field(
        None, description="multigateway --buffer-window: the longest a statement waits (Go duration); "
                          "Multigres' default (10s) when unset.",
    )


class MultiGateway(CellDeployment):
    enabled: bool = Field(
        False, description="Run a multigateway Deployment and Service per cell (PostgreSQL protocol on "
                           "Service port 5432); v0.1.0 only.",
    )
    failover_buffer: FailoverBuffer = Field(
        {}, validate_default=True, description="The multigateway's failover buffer (off unless enabled).",
    )


# --- backup --------------------------------------------------------------------------------------
class FilesystemBackup(SpecModel):
    path: Annotated[str, StringConstraints(pattern=r"^/\S*$", max_length=256)] = Field(
        "/backups", description="Mount path of the shared backup volume in every pool pod; also the "
                                "Database record's backup_location.",
    )
    storage: BackupStorage = Field(
        {}, validate_default=True,
        description="The shared backup PVC: one per shard (v0.1.0; use ReadWriteMany when pods "
                    "run on more than one node) or one per cell (d782aa06).",
    )


def s3_env_credentials(use_env_credentials: bool | None, credentials_secret: str | None) -> bool:
    """Whether v0.1.0 is told to read AWS credentials from the pod environment: the pods carry a
    credentialsSecret as AWS_* variables, so naming one means it (otherwise pgBackRest would be asked
    for instance-metadata credentials and never read the Secret)."""
    return bool(use_env_credentials or credentials_secret)


class S3Backup(SpecModel):
    __rules__: ClassVar = (
        Rule(
            name="s3-irsa-exclusive",
            cel="!has(self.serviceAccountName) || (!has(self.credentialsSecret) && "
                "!(has(self.useEnvCredentials) && self.useEnvCredentials))",
            message="serviceAccountName (IRSA) excludes credentialsSecret and useEnvCredentials",
            check=lambda s: s.service_account_name is None or (
                s.credentials_secret is None and not s.use_env_credentials),
            field_path=".serviceAccountName",
        ),
    )

    bucket: Annotated[str, StringConstraints(min_length=3, max_length=63)] = Field(description="S3 bucket.")
    region: Annotated[str, StringConstraints(min_length=1, max_length=63)] = Field(description="S3 region.")
    endpoint: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="Custom endpoint URL (MinIO, Ceph RGW, ...).",
    )
    key_prefix: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="Prefix of every object key of this shard's repository.",
    )
    use_env_credentials: bool | None = Field(
        None, description="Take AWS credentials from the pod environment.",
    )
    credentials_secret: ObjectName | None = Field(
        None, description="Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.",
    )
    service_account_name: ObjectName | None = Field(
        None, description="ServiceAccount for IRSA / workload identity; pool pods run as it.",
    )

    @property
    def env_credentials(self) -> bool:
        return s3_env_credentials(self.use_env_credentials, self.credentials_secret)


class IssuerRef(SpecModel):
    name: ObjectName = Field(description="Name of the cert-manager Issuer or ClusterIssuer.")
    kind: Literal["Issuer", "ClusterIssuer"] = Field(
        "Issuer", description="Issuer (in the shard's namespace) or ClusterIssuer.")
    group: Annotated[str, StringConstraints(max_length=253)] = Field(
        "cert-manager.io", description="API group of the issuer.")


class PgBackRestTLS(SpecModel):
    """Certificates for pgBackRest's TLS server (standby-initiated backups need them)."""

    __rules__: ClassVar = (
        required_when("tls-secret-needs-name", "mode", "secret", "secretName",
                      "mode 'secret' needs secretName (a Secret with ca.crt, tls.crt and tls.key)"),
        required_when("tls-cert-manager-needs-issuer", "mode", "certManager", "issuerRef",
                      "mode 'certManager' needs issuerRef"),
    )

    mode: Literal["auto", "secret", "certManager"] = Field(
        "auto",
        description="auto: the operator creates a CA and a certificate; secret: use secretName; "
                    "certManager: a cert-manager Certificate from issuerRef.",
    )
    secret_name: ObjectName | None = Field(None, description="User Secret with ca.crt, tls.crt, tls.key.")
    issuer_ref: IssuerRef | None = Field(None, description="cert-manager issuer for mode certManager.")


class BackupSchedules(SpecModel):
    full: Cron = Field("0 1 * * 0", description="Cron schedule (five fields, UTC) of full base backups.")
    differential: Cron = Field(
        "0 1 * * 1-6", description="Cron schedule (five fields, UTC) of differential base backups.")


class BackupVerify(SpecModel):
    """The restore drill: the newest backup restored into a throwaway pod, checked, thrown away."""

    __rules__: ClassVar = (_positive_interval("verify-timeout", "timeout"),)

    schedule: Cron | None = Field(
        None, description="Cron schedule (five fields, UTC) of the drill; unset: only on demand (annotation "
                          f"{keys.ANN_RESTORE_DRILL_REQUEST}).")
    query: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(
        "SELECT 1", description="SQL the restored server must answer without an error (read-only: the server "
                                "stays in recovery), e.g. SELECT count(*) FROM orders.")
    # No "=", ":" or "/": psql would read such a name as connection settings or a URI, not a database.
    database: Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=r"^[^=:/]+$")] = Field(
        "postgres", description="Database the query runs in (a name: no '=', ':' or '/').")
    timeout: Duration = Field(
        "1h", description="A drill still running after this fails (reason Timeout) and its pod is deleted.")

    @property
    def timeout_seconds(self) -> Decimal:
        return go_duration_seconds(self.timeout)


class CloneFrom(SpecModel):
    """Another shard whose repository this one starts from (docs/operations.md, "Clone a shard")."""

    shard: ObjectName = Field(
        description="Name of the source MultigresShard, in this shard's namespace, with a filesystem repository.")


class Backup(SpecModel):
    __rules__: ClassVar = (
        required_when("s3-needs-settings", "type", "s3", "s3", "type 's3' needs the s3 block (bucket, region)"),
        Rule(
            name="clone-needs-filesystem", cel="!has(self.cloneFrom) || self.type == 'filesystem'",
            message="cloneFrom copies the source's filesystem repository into this shard's backup PVC: "
                    "it needs type 'filesystem'",
            check=lambda b: b.clone_from is None or b.type == "filesystem", field_path=".cloneFrom",
        ),
        Rule(
            name="clone-restores", cel="!has(self.cloneFrom) || self.bootstrap != 'initdb'",
            message="cloneFrom starts the shard from the copied backups: bootstrap 'initdb' would start it empty",
            check=lambda b: b.clone_from is None or b.bootstrap != "initdb", field_path=".bootstrap",
        ),
    )

    type: Literal["filesystem", "s3"] = Field("filesystem", description="Where the pgBackRest repository lives.")
    filesystem: FilesystemBackup = Field({}, validate_default=True, description="Shared backup PVC (type filesystem).")
    s3: S3Backup | None = Field(None, description="S3 repository (type s3); pods then use an emptyDir.")
    pgbackrest_tls: PgBackRestTLS = Field(
        {}, validate_default=True, alias="pgbackrestTLS", description="pgBackRest TLS material.",
    )
    schedules: BackupSchedules = Field(
        {}, validate_default=True,
        description="Scheduled base backups, run by the agent on a standby; on demand: annotation "
                    f"{keys.ANN_BACKUP_REQUEST} (docs/operations.md, \"Backups\").")
    health_threshold: Duration = Field(
        "25h", description="BackupHealthy turns False when the newest complete backup is older than this.",
    )
    bootstrap: Literal["auto", "initdb", "recovery"] = Field(
        "auto",
        description="What a pool pod on an empty data directory may do when the repository holds no complete "
                    "backup (v0.1.0; filesystem or S3). recovery: nothing, it waits (condition BootstrapRefused) "
                    "until the repository holds a backup to restore; initdb: start a new, empty shard (Multigres' "
                    "own behaviour); auto: recovery once the shard recorded a backup (status.backup.last.backupId, "
                    f"status.lastBackupTime, or annotation {keys.ANN_BACKUP_RECORDED} on its backup PVC), "
                    "initdb before "
                    "(docs/operations.md, \"Disaster recovery\").",
    )
    clone_from: CloneFrom | None = Field(
        None, description="Start this new shard from a copy of another shard's repository (v0.1.0, filesystem): "
                          "its backups and archived WAL are copied into this shard's backup PVC (the source's is "
                          "mounted read-only), the pods restore the newest backup and the archived WAL, and the "
                          "agent makes them a cohort of their own; the source's superuser password is copied too. "
                          "Set at creation only (docs/operations.md, \"Clone a shard\").")
    verify: BackupVerify | None = Field(
        None, description="Restore drill (v0.1.0): restore the newest complete backup into a throwaway pod that "
                          "only reads the repository (a filesystem one mounted read-only), start PostgreSQL in "
                          "recovery, run a query, delete the pod; the result is status.backup.drill and the "
                          "condition BackupVerified (docs/operations.md, \"Restore drill\").")


# --- maintenance windows -------------------------------------------------------------------------
Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WeekdayList = Annotated[
    list[Weekday], AfterValidator(_unique), Field(json_schema_extra={"x-kubernetes-list-type": "set"}),
]
MAX_WINDOW_HOURS = 24


class MaintenanceWindow(SpecModel):
    """A weekly window (UTC) in which disruptive actions may start (docs/operations.md)."""

    __rules__: ClassVar = (
        Rule(
            name="window-duration-range",
            cel=f"duration(self.duration) > duration('0s') && "
                f"duration(self.duration) <= duration('{MAX_WINDOW_HOURS}h')",
            message=f"duration must be greater than zero and at most {MAX_WINDOW_HOURS}h "
                    "(list more days for a longer window)",
            check=lambda w: 0 < go_duration_seconds(w.duration) <= MAX_WINDOW_HOURS * 3600,
            field_path=".duration",
        ),
    )

    days: WeekdayList = Field(min_length=1, max_length=7, description="Weekdays the window opens on (Mon..Sun).")
    start: Annotated[str, StringConstraints(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] = Field(
        description="Opening time, HH:MM in UTC.",
    )
    duration: Duration = Field(description="How long it stays open, e.g. 2h or 90m (at most 24h).")

    @property
    def seconds(self) -> Decimal:
        return go_duration_seconds(self.duration)


# --- the shard -----------------------------------------------------------------------------------
# v0.1.0 refuses a pooler whose `<cell>_<service-id>` (its PostgreSQL application name) exceeds 63
# characters; our service ids have a fixed length, so that bounds the cell names of pools.
V0_1_MAX_POOL_CELL = 63 - 1 - len(naming.service_id(""))


def _pool_cells_fit(spec: MultigresShardSpec) -> bool:
    return spec.multigres.version is not keys.MultigresVersion.V0_1_0 or all(
        len(cell) <= V0_1_MAX_POOL_CELL for pool in spec.pools.values() for cell in pool.cells)


def durability_need(policy: str) -> tuple[bool, int]:
    """(multi-cell?, n) of a durability policy matching DURABILITY_POLICY_PATTERN."""
    match = re.match(DURABILITY_POLICY_PATTERN, policy)
    if match is None:
        raise ValueError(f"durabilityPolicy: {policy!r} is not AT_LEAST_<n> or MULTI_CELL_AT_LEAST_<n>")
    return match.group(1) is not None, int(match.group(2))


def _pool_pods(spec: MultigresShardSpec) -> int:
    return sum(pool.replicas_per_cell * len(pool.cells) for pool in spec.pools.values())


def _pool_cells(spec: MultigresShardSpec) -> int:
    return len({cell for pool in spec.pools.values() for cell in pool.cells})


def _durability_achievable(spec: MultigresShardSpec) -> bool:
    """v0.1.0 elects a primary only for a cohort that can meet the policy (CheckAchievable): AT_LEAST_<n>
    needs n poolers, MULTI_CELL_AT_LEAST_<n> poolers in n cells. Below that the shard never has one."""
    multi_cell, n = durability_need(spec.durability_policy)
    return (_pool_cells(spec) if multi_cell else _pool_pods(spec)) >= n


def _durability_detail(spec: MultigresShardSpec) -> str:
    multi_cell = durability_need(spec.durability_policy)[0]
    have = f"{_pool_cells(spec)} cell(s)" if multi_cell else f"{_pool_pods(spec)} pod(s)"
    return f"{spec.durability_policy} with {have}"


# CEL halves of the two counts. The policy's n is the text after its last '_'. Distinct cells: every
# (pool, cell) pair adds 1/(pools listing that cell), so each cell adds 1 in all (at most 8 pools).
_POLICY_N_CEL = "int(self.durabilityPolicy.substring(self.durabilityPolicy.lastIndexOf('_') + 1))"
_POOL_PODS_CEL = "self.pools.map(p, self.pools[p].replicasPerCell * size(self.pools[p].cells)).sum()"
_POOL_CELLS_CEL = ("self.pools.map(p, self.pools[p].cells.map(c, "
                   "1.0 / double(size(self.pools.filter(q, c in self.pools[q].cells)))).sum()).sum()")


def _topology_kept(old: MultigresShardSpec, new: MultigresShardSpec) -> bool:
    return all(new.cell_topology_labels.get(c) == labels for c, labels in old.cell_topology_labels.items())


class MultigresShardSpec(SpecModel):
    """The spec of a MultigresShard: one Multigres shard and everything its pools need."""

    __rules__: ClassVar = (
        Rule(
            name="single-database", cel="self.databaseName == 'postgres'",
            message="only database 'postgres' is supported (Multigres MVP)",
            check=lambda s: s.database_name == "postgres", field_path=".databaseName",
        ),
        Rule(
            name="single-shard", cel="self.shardName == '0-inf'",
            message="only shard '0-inf' is supported (Multigres MVP)",
            check=lambda s: s.shard_name == "0-inf", field_path=".shardName",
        ),
        Rule(
            name="multigateway-needs-v0-1",
            cel=f"!self.multigateway.enabled || self.multigres.version == '{keys.MultigresVersion.V0_1_0}'",
            message=f"multigateway is rendered only for Multigres {keys.MultigresVersion.V0_1_0}",
            check=lambda s: not s.multigateway.enabled or s.multigres.version is keys.MultigresVersion.V0_1_0,
            field_path=".multigateway.enabled",
        ),
        Rule(
            name="v0-1-cell-name-length",
            cel=f"self.multigres.version != '{keys.MultigresVersion.V0_1_0}' || "
                f"self.pools.all(p, self.pools[p].cells.all(c, size(c) <= {V0_1_MAX_POOL_CELL}))",
            message=f"Multigres {keys.MultigresVersion.V0_1_0} needs pool cell names of at most "
                    f"{V0_1_MAX_POOL_CELL} characters (a pooler's '<cell>_<service-id>' is at most 63)",
            check=_pool_cells_fit, field_path=".pools",
        ),
        Rule(
            name="failover-grace-needs-v0-1",
            cel=f"(!has(self.multiorch.failoverGracePeriod) && !has(self.multiorch.failoverGracePeriodMaxJitter)) "
                f"|| self.multigres.version == '{keys.MultigresVersion.V0_1_0}'",
            message=f"multiorch.failoverGracePeriod and failoverGracePeriodMaxJitter are flags of Multigres "
                    f"{keys.MultigresVersion.V0_1_0}'s multiorch",
            check=lambda s: (s.multiorch.failover_grace_period is None
                             and s.multiorch.failover_grace_period_max_jitter is None)
            or s.multigres.version is keys.MultigresVersion.V0_1_0,
            field_path=".multiorch",
        ),
        Rule(
            name="grpc-tls-needs-v0-1",
            cel=f"!has(self.security.grpcTLS) || self.multigres.version == '{keys.MultigresVersion.V0_1_0}'",
            message=f"security.grpcTLS is rendered only for Multigres {keys.MultigresVersion.V0_1_0} (era-A "
                    "pods and the agent's era-A client stay plaintext)",
            check=lambda s: s.security.grpc_tls is None or s.multigres.version is keys.MultigresVersion.V0_1_0,
            field_path=".security.grpcTLS",
        ),
        Rule(
            name="v0-1-durability-needs-a-standby",
            cel=f"self.multigres.version != '{keys.MultigresVersion.V0_1_0}' || {_POLICY_N_CEL} >= 2",
            message=f"Multigres {keys.MultigresVersion.V0_1_0} cannot promote a primary under AT_LEAST_1 or "
                    "MULTI_CELL_AT_LEAST_1 (its promotion sets synchronous replication and finds no standby to "
                    "name): use AT_LEAST_2 or more, with at least two pool pods",
            check=lambda s: s.multigres.version is not keys.MultigresVersion.V0_1_0
            or durability_need(s.durability_policy)[1] >= 2,
            field_path=".durabilityPolicy",
        ),
        Rule(
            name="durability-policy-achievable",
            cel=f"self.durabilityPolicy.startsWith('MULTI_CELL_') ? {_POOL_CELLS_CEL} > double({_POLICY_N_CEL}) - 0.5 "
                f": {_POOL_PODS_CEL} >= {_POLICY_N_CEL}",
            message="the pools cannot meet durabilityPolicy, so Multigres would never elect a primary "
                    "(AT_LEAST_<n> needs n pool pods: replicasPerCell times cells, over every pool; "
                    "MULTI_CELL_AT_LEAST_<n> needs pool pods in n cells)",
            check=_durability_achievable, field_path=".durabilityPolicy",
            # Python names the counts; CEL does not (a messageExpression repeating the counts is over the
            # apiserver's cost budget).
            detail=_durability_detail,
        ),
        Rule(
            name="clone-needs-v0-1",
            cel=f"!has(self.backup.cloneFrom) || self.multigres.version == '{keys.MultigresVersion.V0_1_0}'",
            message=f"backup.cloneFrom needs Multigres {keys.MultigresVersion.V0_1_0} (its restore and its "
                    "certified rule change)",
            check=lambda s: s.backup.clone_from is None or s.multigres.version is keys.MultigresVersion.V0_1_0,
            field_path=".backup.cloneFrom",
        ),
        Rule(
            name="clone-takes-source-password",
            cel="!has(self.backup.cloneFrom) || !has(self.postgresPasswordSecretRef)",
            message="a clone restores the source's users, so it must log in with the source's superuser password: "
                    "leave postgresPasswordSecretRef unset and the operator copies it into the clone's own Secret",
            check=lambda s: s.backup.clone_from is None or s.postgres_password_secret_ref is None,
            field_path=".postgresPasswordSecretRef",
        ),
        *postgres_config_rules(),
    )
    __transitions__: ClassVar = (
        TransitionRule(
            name="clone-from-at-creation",
            cel="has(oldSelf.backup.cloneFrom) == has(self.backup.cloneFrom) && "
                "(!has(self.backup.cloneFrom) || self.backup.cloneFrom == oldSelf.backup.cloneFrom)",
            message="backup.cloneFrom is set when the shard is created and fixed afterwards: a shard that holds "
                    "data cannot be replaced by a copy of another",
            check=lambda old, new: old.backup.clone_from == new.backup.clone_from,
            field_path=".backup.cloneFrom",
        ),
        TransitionRule(
            name="pools-append-only", cel="oldSelf.pools.all(p, p in self.pools)",
            message="pools are append-only: removing or renaming a pool would orphan its pods and PVCs",
            check=lambda old, new: set(old.pools) <= set(new.pools), field_path=".pools",
        ),
        TransitionRule(
            name="cell-topology-immutable",
            cel="!has(oldSelf.cellTopologyLabels) || oldSelf.cellTopologyLabels.all(c, "
                "has(self.cellTopologyLabels) && c in self.cellTopologyLabels && "
                "self.cellTopologyLabels[c] == oldSelf.cellTopologyLabels[c])",
            message="a cell's topology labels (zone/region) are immutable once set: "
                    "its pods and volumes are bound there",
            check=_topology_kept, field_path=".cellTopologyLabels",
        ),
        TransitionRule(
            name="password-secret-immutable",
            cel="has(oldSelf.postgresPasswordSecretRef) == has(self.postgresPasswordSecretRef) && "
                "(!has(self.postgresPasswordSecretRef) || "
                "self.postgresPasswordSecretRef == oldSelf.postgresPasswordSecretRef)",
            message="postgresPasswordSecretRef is fixed once the shard exists: PostgreSQL keeps the password "
                    "it was initialised with, so pods given another Secret could not log in",
            check=lambda old, new: old.postgres_password_secret_ref == new.postgres_password_secret_ref,
            field_path=".postgresPasswordSecretRef",
        ),
    )

    cluster_name: DnsLabel = Field(description="Multigres cluster name; the first part of every object name.")
    database_name: Annotated[str, StringConstraints(max_length=30)] = Field(
        "postgres", description="Database; only 'postgres' today.",
    )
    table_group_name: Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=25)] = Field(
        "default", description="Table group.",
    )
    shard_name: Annotated[str, StringConstraints(max_length=25)] = Field(
        "0-inf", description="Shard; only '0-inf' today.",
    )
    multigres: MultigresRelease = Field({}, validate_default=True, description="The Multigres version the shard runs.")
    images: Images = Field({}, validate_default=True, description="Container images.")
    global_topo_server: GlobalTopoServer = Field(description="The global topology server.")
    pools: dict[PoolName, Pool] = Field(
        min_length=1, max_length=8, description="Pools by name (append-only).",
    )
    cell_topology_labels: dict[CellName, dict[LabelKey, LabelValue]] = Field(
        {}, max_length=32,
        description="Per cell, the node labels its pods must run on (nodeSelector), e.g. "
                    "{zone1: {topology.kubernetes.io/zone: us-east-1a}}. Immutable per cell once set.",
    )
    multiorch: MultiOrch = Field({}, validate_default=True, description="MultiOrch Deployments, one per cell.")
    multigateway: MultiGateway = Field(
        {}, validate_default=True, description="Optional multigateway Deployments, one per cell.",
    )
    monitoring: Monitoring = Field({}, validate_default=True, description="Metrics sidecars.")
    backup: Backup = Field({}, validate_default=True, description="pgBackRest repository, TLS and schedules.")
    pvc_deletion_policy: PVCDeletionPolicy = Field(
        {}, validate_default=True, description="Data PVC lifecycle; pools may override.",
    )
    postgres_config: dict[GucName, Annotated[str, StringConstraints(max_length=1024)]] = Field(
        {}, max_length=256,
        description="postgresql.conf overrides, rendered into the shard's postgres-config ConfigMap.",
    )
    postgres_config_ref: ConfigMapKeyRef | None = Field(
        None, description="A ConfigMap key holding a full postgresql.conf template for pgctld.",
    )
    pg_hba_template: Annotated[str, StringConstraints(max_length=16384)] | None = Field(
        None, description="pg_hba.conf template for pgctld ({{.User}} is the superuser); see docs/api.md "
                          "for the default.",
    )
    initdb_args: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="Extra initdb arguments (POSTGRES_INITDB_ARGS).",
    )
    postgres_superuser: Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]*$", max_length=63)] = Field(
        "postgres", description="PostgreSQL superuser name.",
    )
    postgres_password_secret_ref: SecretKeyRef | None = Field(
        None, description="Your Secret holding the superuser password (one line, no ':' or '\\'); fixed once the "
                          "shard exists. Unset: the engine generates `<shard>-postgres-password`/password.",
    )
    log_levels: LogLevels = Field({}, validate_default=True, description="Log levels per component.")
    security: Security = Field(
        {}, validate_default=True,
        description="pg_hba source networks and the shard's NetworkPolicy (docs/api.md, \"Security\").")
    maintenance_windows: list[MaintenanceWindow] = Field(
        [], max_length=16,
        description="Weekly UTC windows in which disruptive actions (rolling updates, scale-down and "
                    "decommission drains, filesystem-resize restarts) may start; empty means any time.",
    )
    durability_policy: Annotated[str, StringConstraints(pattern=DURABILITY_POLICY_PATTERN, max_length=63)] = Field(
        "AT_LEAST_2",
        description="Bootstrap durability policy registered with the database: `AT_LEAST_<n>` or "
                    "`MULTI_CELL_AT_LEAST_<n>` (contract §2.7).",
    )

    # --- derived values (not fields) --------------------------------------------------------------
    @property
    def shard_id(self) -> naming.ShardId:
        return naming.ShardId(self.cluster_name, self.database_name, self.table_group_name, self.shard_name)

    def pool_cells(self) -> list[str]:
        """Every cell of every pool, in first-seen order (pools sorted by name)."""
        seen: dict[str, None] = {}
        for name in sorted(self.pools):
            seen.update(dict.fromkeys(self.pools[name].cells))
        return list(seen)

    def multiorch_cells(self) -> list[str]:
        return list(self.multiorch.cells) or self.pool_cells()

    def multigateway_cells(self) -> list[str]:
        if not self.multigateway.enabled:
            return []
        return list(self.multigateway.cells) or self.pool_cells()

    def container_images(self) -> ContainerImages:
        """Every container's image: the user's, else the one `multigres.version` ships."""
        release, images = RELEASE_IMAGES[self.multigres.version], self.images
        return ContainerImages(
            multipooler=images.multipooler or release.multigres,
            multiorch=images.multiorch or release.multigres,
            multigateway=images.multigateway or release.multigres,
            postgres=images.postgres or release.pgctld,
            postgres_exporter=images.postgres_exporter,
        )

    def pvc_policy(self, pool: str) -> PVCDeletionPolicy:
        """The shard policy with the pool's override on top (pool > shard, field by field)."""
        override = self.pools[pool].pvc_deletion_policy
        if override is None:
            return self.pvc_deletion_policy
        return PVCDeletionPolicy(
            when_deleted=override.when_deleted or self.pvc_deletion_policy.when_deleted,
            when_scaled=override.when_scaled or self.pvc_deletion_policy.when_scaled,
        )

    def password_secret(self) -> SecretKeyRef:
        return self.postgres_password_secret_ref or SecretKeyRef(
            name=naming.password_secret_name(self.shard_id), key="password",
        )


class ObjectMeta(BaseModel):
    """The metadata we read; everything else the apiserver adds is accepted and ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: ObjectName
    namespace: DnsLabel | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    uid: str | None = None


class MultigresShard(BaseModel):
    """A whole MultigresShard document (apiVersion, kind, metadata, spec); status is ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # validate_default: keys.API_GROUP_VERSION is a str built from its parts; pydantic checks it is this literal.
    api_version: Literal["pools.multigres.com/v1alpha1"] = Field(
        keys.API_GROUP_VERSION, alias="apiVersion", validate_default=True,
    )
    kind: Literal["MultigresShard"] = keys.SHARD_KIND
    metadata: ObjectMeta
    spec: MultigresShardSpec
    status: dict[str, Any] | None = None


class Condition(BaseModel):
    """A kstatus/metav1 condition."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: Annotated[str, StringConstraints(min_length=1, max_length=316)] = Field(
        description=f"One of {', '.join(keys.ShardCondition)} (docs/api.md, status).")
    status: Literal["True", "False", "Unknown"] = Field(description="Whether the condition holds.")
    reason: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        default=None, description="One CamelCase word saying why, e.g. HealthGate or InvalidSpec.")
    message: Annotated[str, StringConstraints(max_length=conditions.MESSAGE_MAX)] | None = Field(
        default=None, description="What a person should know: the blocking health gate, the refused field, ...")
    last_transition_time: str | None = Field(
        default=None, alias="lastTransitionTime", description="When status last changed (RFC 3339).")
    observed_generation: int | None = Field(
        default=None, alias="observedGeneration",
        description="The metadata.generation this condition was computed for.")


class PgBackRestTLSStatus(BaseModel):
    """The generated pgBackRest TLS material (times in RFC 3339, read from the Secrets' annotations)."""

    model_config = ConfigDict(populate_by_name=True)

    certificate_secret: str = Field(alias="certificateSecret", description="The certificate Secret the pods mount.")
    certificate_issued_at: str = Field(alias="certificateIssuedAt", description="When the certificate was (re)issued.")
    certificate_not_after: str = Field(alias="certificateNotAfter", description="When the certificate expires.")
    ca_secret: str = Field(alias="caSecret", description="The CA Secret (trust bundle and signing key).")
    ca_issued_at: str = Field(alias="caIssuedAt", description="When the signing CA was made.")
    ca_not_after: str = Field(alias="caNotAfter", description="When the signing CA expires.")
    next_renewal: str = Field(alias="nextRenewal",
                              description="When the engine next renews the certificate, rotates or promotes the CA.")
    ca_promotes_at: str | None = Field(
        default=None, alias="caPromotesAt",
        description="During a CA rotation: the earliest time the successor CA, already trusted, starts signing.")
    ca_promotion_waits_for: list[str] | None = Field(
        default=None, alias="caPromotionWaitsFor",
        description="Pool pods created before the successor CA was published: their pgBackRest servers load "
                    "the trust bundle at start, so promotion waits until they are replaced (a rolling update).")
    ca_promotion_forced_at: str | None = Field(
        default=None, alias="caPromotionForcedAt",
        description="When promotion happens even if caPromotionWaitsFor still lists pods.")


class BackupRun(BaseModel):
    """One base backup the agent started (docs/operations.md, "Backups")."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: str = Field(description="full, differential or incremental.")
    trigger: Literal["schedule", "request"] = Field(
        description=f"schedule: spec.backup.schedules; request: annotation {keys.ANN_BACKUP_REQUEST}.")
    pod: str = Field(description="The pod whose multipooler took it.")
    force_primary: bool = Field(
        default=False, alias="forcePrimary", description="Taken on the primary because no standby qualified.")
    job_id: str = Field(alias="jobId", description="The job id given to the Backup RPC (a pgBackRest annotation).")
    started_at: str = Field(alias="startedAt", description="When the agent called Backup (RFC 3339).")
    finished_at: str | None = Field(default=None, alias="finishedAt", description="When Backup returned (RFC 3339).")
    backup_id: str | None = Field(default=None, alias="backupId", description="pgBackRest's label of the backup.")
    size_bytes: int | None = Field(default=None, alias="sizeBytes", description="Size GetBackups reports for it.")
    error: str | None = Field(default=None, description="Why it failed; absent when it succeeded or still runs.")


class DrillRun(BaseModel):
    """One restore drill (docs/operations.md, "Restore drill")."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    trigger: Literal["schedule", "request"] = Field(
        description=f"schedule: spec.backup.verify.schedule; request: annotation {keys.ANN_RESTORE_DRILL_REQUEST}.")
    backup_id: str | None = Field(default=None, alias="backupId", description="The backup it restores.")
    pod: str | None = Field(default=None, description="The throwaway pod it ran in (deleted once it ended).")
    started_at: str | None = Field(default=None, alias="startedAt", description="When its pod was created (RFC 3339).")
    finished_at: str | None = Field(default=None, alias="finishedAt", description="When it ended (RFC 3339).")
    result: Literal["Verified", "Failed"] | None = Field(default=None, description="Absent while it runs.")
    reason: str | None = Field(
        default=None, description="Verified, or why it failed: NoBackup, RestoreFailed, PostgresDidNotStart, "
                                  "QueryFailed, Timeout, PodLost, Cancelled, SetupFailed, Unexpected.")
    message: str | None = Field(default=None, description="What happened, with the drill's own words when a kubelet "
                                                          "kept them.")


class DrillStatus(BaseModel):
    """The engine's record of restore drills (its annotation on the shard)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    handled: str | None = Field(default=None, description="The latest due time of the schedule already handled.")
    running: DrillRun | None = Field(default=None, description="The drill in progress, if any.")
    last: DrillRun | None = Field(default=None, description="The drill that ended last.")


class BackupStatus(BaseModel):
    """The agent's backup bookkeeping (its annotation on the shard, copied here by the engine), and
    the engine's restore drills."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schedule: dict[str, str] = Field(
        default={}, description="Per schedule (full, differential): the latest due time already handled (RFC 3339).")
    running: BackupRun | None = Field(default=None, description="The backup in progress, if any.")
    last: BackupRun | None = Field(default=None, description="The backup that finished last, successful or not.")
    waiting: str | None = Field(default=None, description="Why a due or requested backup has not started yet.")
    drill: DrillStatus | None = Field(default=None, description="Restore drills (spec.backup.verify).")
    last_verified: str | None = Field(
        default=None, alias="lastVerified",
        description="When a restore drill last brought a backup up and answered the query (RFC 3339).")


class RestoreStatus(BaseModel):
    """The pool pods' restore from the repository, as the agent reports it (docs/operations.md,
    "Disaster recovery")."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    state: Literal["Restoring", "Restored"] = Field(
        description="Restoring while a pod's multipooler restores; Restored once the pods that did are done.")
    pods: list[str] = Field(description="The pods restoring, or that restored.")
    started_at: str | None = Field(
        default=None, alias="startedAt", description="When the first of them started (RFC 3339).")
    finished_at: str | None = Field(default=None, alias="finishedAt", description="When the last finished (RFC 3339).")
    backup_id: str | None = Field(
        default=None, alias="backupId",
        description="The backup restored: the newest complete one the agent's health check saw (v0.1.0 "
                    "restores the newest complete backup).")
    wal_position: str | None = Field(
        default=None, alias="walPosition",
        description="The newest WAL position a restored pod reported when its restore was over (its replay "
                    "of the archived WAL).")


class CloneStatus(BaseModel):
    """A clone's start from its source's repository (docs/operations.md, "Clone a shard")."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    source: str = Field(description="The source MultigresShard, <namespace>/<name>.")
    state: Literal["Copying", "Restoring", "Cloned", "Failed"] = Field(
        description="Copying: the source's repository is copied into this shard's backup volume; Failed: the last "
                    "copy failed (it is tried again); Restoring: the pods restore the copy and the agent waits to "
                    "elect this shard's first primary; Cloned: it has one, the shard is on its own.")
    message: str | None = Field(default=None, description="What happens now, or why the last step failed.")
    attempt: int | None = Field(default=None, description="Copies tried so far.")
    copied_at: str | None = Field(
        default=None, alias="copiedAt", description="When the copy was done (RFC 3339).")
    leader: str | None = Field(default=None, description="The first primary's pooler, <cell>_<name>.")
    term: int | None = Field(default=None, description="The term of this shard's first rule.")
    frozen_lsn: str | None = Field(
        default=None, alias="frozenLsn", description="The WAL position the copy was replayed to when elected.")
    elected_at: str | None = Field(
        default=None, alias="electedAt", description="When the first primary was elected (RFC 3339).")


class SwitchoverStatus(BaseModel):
    """The engine's decision on the last switchover request and how far it got."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    request: str = Field(description=f"The value of {keys.ANN_SWITCHOVER_REQUEST}: {keys.SWITCHOVER_ANY!r} or a pod.")
    decision: Literal["Accepted", "Refused"] = Field(description="What the engine decided.")
    message: str = Field(description="Why it was refused, or what it does.")
    at: str = Field(description="When it decided (RFC 3339).")
    state: Literal["Refused", "InProgress", "Completed"] = Field(
        description="Completed once the old primary's pod is gone and another pod is the PRIMARY.")
    from_: str | None = Field(
        default=None, alias="from", description="The primary's pod when the request was accepted.")
    primary: str | None = Field(default=None, description="The primary's pod once Completed.")


class MultigresShardStatus(BaseModel):
    """What the engine and the agent report; unknown fields are kept so either can grow it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    observed_generation: int | None = Field(
        default=None, alias="observedGeneration",
        description="The metadata.generation the engine last acted on (or refused); status describes that spec.")
    phase: Literal["Initializing", "Progressing", "Healthy", "Degraded", "Unknown"] | None = Field(
        default=None,
        description="Healthy: every pod ready, a primary among them (when the agent publishes roles) and "
                    "nothing to do; Progressing: actions or waits pending, or no primary; "
                    "Degraded: refused spec, crash loop or an empty pool.")
    message: str | None = Field(
        default=None, description="One line: the refusal, what the engine waits for, or pods ready.")
    ready_replicas: int | None = Field(
        default=None, alias="readyReplicas", description="Ready pool pods, draining and terminating ones excluded.")
    pools_ready: bool | None = Field(
        default=None, alias="poolsReady", description="Every pool has all its replicas, each ready and none draining.")
    orch_ready: bool | None = Field(
        default=None, alias="orchReady", description="Every MultiOrch Deployment has its ready replicas.")
    cells: list[str] | None = Field(default=None, description="Cells that have pool pods.")
    conditions: list[Condition] = Field(
        default=[], description="kstatus conditions, one per type (see Condition.type).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    pod_roles: dict[str, str] = Field(
        default={}, alias="podRoles",
        description="Pool pod name to the role the agent published: PRIMARY, REPLICA or DRAINED.")
    last_backup_time: str | None = Field(
        default=None, alias="lastBackupTime", description="When the newest complete backup finished (agent's check).")
    last_backup_type: str | None = Field(
        default=None, alias="lastBackupType", description="pgBackRest type of that backup (full, diff or incr).")
    backup: BackupStatus | None = Field(
        default=None,
        description="Scheduled and requested base backups run by the agent (docs/operations.md, \"Backups\").")
    restore: RestoreStatus | None = Field(
        default=None,
        description="The pool pods' restore from the backup repository (docs/operations.md, "
                    "\"Disaster recovery\").")
    clone: CloneStatus | None = Field(
        default=None, description="spec.backup.cloneFrom: the copy, the restore and the first primary "
                                  "(docs/operations.md, \"Clone a shard\").")
    switchover: SwitchoverStatus | None = Field(
        default=None,
        description=f"The last request to move the primary away ({keys.ANN_SWITCHOVER_REQUEST}; "
                    "docs/operations.md, \"Move the primary\").")
    pgbackrest_tls: PgBackRestTLSStatus | None = Field(
        default=None, alias="pgbackrestTLS",
        description="pgbackrestTLS.mode auto: the generated certificate and CA, when they expire and when the "
                    "engine renews them next (docs/operations.md, \"Certificate renewal\").")


class SpecError(ValueError):
    """Invalid input: one 'field.path: problem (rule: name)' line per problem."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("invalid MultigresShard:\n" + "\n".join(f"  - {e}" for e in errors))


def value_problem(type_: Any, value: Any) -> str | None:
    """Why `value` is not a valid `type_` (a scalar type of this module, such as DnsLabel), or None."""
    try:
        TypeAdapter(type_).validate_python(value)
    except ValidationError as exc:
        return str(exc.errors(include_url=False)[0]["msg"])
    return None


def load_spec(data: Mapping[str, Any], root: str = "spec") -> MultigresShardSpec:
    try:
        return MultigresShardSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, root)) from None


def load_shard(document: Mapping[str, Any]) -> MultigresShard:
    """Validate a MultigresShard document; SpecError lists every problem with its field path."""
    if not isinstance(document, Mapping):
        raise SpecError([f"(document): expected a mapping, got {type(document).__name__}"])
    try:
        return MultigresShard.model_validate(document)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, "")) from None


def check_transition(old: MultigresShardSpec, new: MultigresShardSpec) -> list[str]:
    """Every transition rule `new` breaks against the stored `old` (empty when the update is allowed)."""
    return transition_errors(old, new, "spec")


def spec_to_dict(spec: MultigresShardSpec) -> dict[str, Any]:
    """The spec as it goes on the wire: camelCase, defaults filled in, unset optionals left out."""
    return spec.model_dump(mode="json", by_alias=True, exclude_none=True)


def status_to_dict(status: MultigresShardStatus) -> dict[str, Any]:
    """The status as it goes on the wire: camelCase, and only the fields that were set, so a field the
    engine leaves out (podRoles when empty: server-side apply would turn it into null) stays out, and
    whatever an earlier status carried beyond the model (extra fields) is written back as it was."""
    return status.model_dump(mode="json", by_alias=True, exclude_unset=True)
