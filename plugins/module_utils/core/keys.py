"""Every label key, annotation key, state, role and finalizer used by the collection and the agent.

This is the one place these strings are spelled. Keys shared with the Go multigres operator use its
exact spelling (shared/reference/multigres-contract.md §3.2, §3.3) so the two can read each other's
objects; keys of our own live under pools.multigres.com.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# --- our API -------------------------------------------------------------------------------------
API_GROUP = "pools.multigres.com"
API_VERSION = "v1alpha1"
API_GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"
SHARD_KIND: Final = "MultigresShard"  # Final: its literal type is the model's `kind`
SHARD_PLURAL = "multigresshards"
SHARD_SHORT_NAME = "mgs"

# The project's own images, the one place their names are made: the install bundle, the ArgoCD
# sidecar, the Ansible Operator image and `make images` read them. The tag is the release, the
# version galaxy.yml and pyproject.toml carry (tests/unit/packaging checks the three agree).
RELEASE = "0.1.0"
POOLS_IMAGE = f"ghcr.io/multigres/pools:{RELEASE}"
ANSIBLE_OPERATOR_IMAGE = f"ghcr.io/multigres/pools-ansible-operator:{RELEASE}"
EXECUTION_ENVIRONMENT_IMAGE = f"ghcr.io/multigres/pools-ee:{RELEASE}"

# One server-side-apply field manager for every object we own; status uses its own manager so a
# spec apply never takes ownership of status fields (and vice versa).
FIELD_MANAGER = "multigres-pools"
STATUS_FIELD_MANAGER = "multigres-pools-status"
AGENT_FIELD_MANAGER = "multigres-pools-agent"

# --- labels (contract §3.2) ----------------------------------------------------------------------
LABEL_APP_NAME = "app.kubernetes.io/name"
LABEL_APP_INSTANCE = "app.kubernetes.io/instance"
LABEL_APP_COMPONENT = "app.kubernetes.io/component"
LABEL_APP_PART_OF = "app.kubernetes.io/part-of"
LABEL_APP_MANAGED_BY = "app.kubernetes.io/managed-by"

LABEL_CLUSTER = "multigres.com/cluster"
LABEL_DATABASE = "multigres.com/database"
LABEL_TABLEGROUP = "multigres.com/tablegroup"
LABEL_SHARD = "multigres.com/shard"
LABEL_POOL = "multigres.com/pool"
LABEL_CELL = "multigres.com/cell"
LABEL_ROLE = "multigres.com/role"
LABEL_ZONE = "multigres.com/zone"
LABEL_REGION = "multigres.com/region"
# Ours: the replica index of a pool pod or data PVC, so the planner never parses names.
LABEL_INDEX = "pools.multigres.com/index"
# Ours: a pool pod's name is in its headless Service's DNS while it carries this label. The agent
# takes it off when a drain is finished, so the name stops resolving before the pod's multipooler
# stops: a peer that re-resolves then (multiorch, the multigateway) finds no address and asks again
# within seconds, instead of caching the dying pod's address for gRPC's 30 s (docs/agent.md).
LABEL_DNS = "pools.multigres.com/dns"
DNS_PUBLISHED = "published"

APP_NAME = "multigres"
PART_OF = "multigres"
MANAGED_BY = "multigres-operator"
COMPONENT_POOL = "shard-pool"
COMPONENT_MULTIORCH = "multiorch"
COMPONENT_MULTIGATEWAY = "multigateway"
COMPONENT_BACKUP = "shard-backup"
COMPONENT_CONFIG = "shard-config"
COMPONENT_NETWORK_POLICY = "shard-network-policy"
COMPONENT_RESTORE_DRILL = "restore-drill"
COMPONENT_CLONE_COPY = "clone-copy"  # the throwaway pod copying a clone's source repository

# Label keys whose values we set on every object we render; user-supplied pod labels may not use them.
OWNED_LABEL_KEYS = (LABEL_APP_NAME, LABEL_APP_INSTANCE, LABEL_APP_COMPONENT, LABEL_APP_PART_OF, LABEL_APP_MANAGED_BY)
# Label and annotation keys under this DNS domain (and its subdomains: drain., pools.) belong to the
# engine, the agent and the Go operator; user-supplied pod labels and annotations may not use them.
OWNED_KEY_DOMAIN = "multigres.com"
# Kubernetes sets this label on every namespace (its name): NetworkPolicy peers select namespaces by it.
LABEL_NAMESPACE_NAME = "kubernetes.io/metadata.name"

# --- the install (install/bundle.py) ---------------------------------------------------------------------
# Where the install bundle runs the operator and the agent, and the labels of their pods; a shard's
# NetworkPolicy lets the agent in by these by default (spec.security.networkPolicy.agent).
INSTALL_NAMESPACE = "multigres-pools-system"
INSTALL_APP_NAME = "multigres-pools"
OPERATOR_COMPONENT = "multigres-pools-operator"
AGENT_COMPONENT = "multigres-pools-agent"
# The metrics Services of the install bundle: their port name, and what the ServiceMonitor selects.
METRICS_PORT_NAME = "metrics"
LABEL_METRICS = "pools.multigres.com/metrics"
# The ValidatingAdmissionPolicy (and its binding) that lets the agent change pool pods only.
AGENT_POD_POLICY = "multigres-pools-agent-pool-pods-only"
# /metrics behind Kubernetes authentication (src/multigres_pools/metrics_access.py): the ClusterRole
# that lets the operator and the agent review tokens, the one a scraper needs (get /metrics), and the
# monitoring bundle's scraper ServiceAccount with its token Secret.
METRICS_AUTH_ROLE = "multigres-pools-metrics-auth"
METRICS_READER_ROLE = "multigres-pools-metrics-reader"
# The operator's read-only view of Nodes (which are cordoned: plan/maintenance.py), cluster-scoped by nature.
OPERATOR_NODES_ROLE = "multigres-pools-operator-nodes"
METRICS_SCRAPER = "multigres-pools-metrics-scraper"
METRICS_SCRAPER_TOKEN = "multigres-pools-metrics-scraper-token"

# --- annotations (contract §3.3) -----------------------------------------------------------------
ANN_DRAIN_STATE = "drain.multigres.com/state"
ANN_DRAIN_REQUESTED_AT = "drain.multigres.com/requested-at"
ANN_SPEC_HASH = "multigres.com/spec-hash"
ANN_POSTGRES_CONFIG_HASH = "multigres.com/postgres-config-hash"
ANN_PROJECT_REF = "multigres.com/project-ref"

# Ours. Why the engine asked for the drain (one of DrainReason), written with `requested`.
ANN_DRAIN_REASON = "drain.multigres.com/reason"
# Written by the agent: why the current step cannot advance (empty when it can).
ANN_DRAIN_BLOCKED = "drain.multigres.com/blocked-reason"
# Written by the agent when it entered the current state (drives DrainStalled).
ANN_DRAIN_STATE_SINCE = "drain.multigres.com/state-since"
# Set by a human to force the current drain step; value is the state being forced past.
ANN_DRAIN_FORCE = "drain.multigres.com/force"
# Written by the agent when it forced a step: `<state>@<time>`, comma-separated (state/drain_annotations.py).
ANN_DRAIN_FORCED = "drain.multigres.com/forced"
# Written by the agent before it makes a standby refuse cohort membership (Multigres v0.1.0
# StopReplication); if the drain is then cancelled, the agent undoes it and removes this.
ANN_DRAIN_INELIGIBLE = "drain.multigres.com/made-ineligible"
# Written by the agent on a pod listed in spec.pools.<pool>.fenced before it makes the standby refuse
# cohort membership (the fence); removed once a pod no longer listed was made eligible again.
ANN_FENCED = "pools.multigres.com/fenced"
# Set by the engine on the primary before it is drained in a rolling update.
ANN_SWITCHOVER = "pools.multigres.com/switchover"
# On the MultigresShard, set by a human: move the primary away now (plan/switchover.py). The value is
# SWITCHOVER_ANY (multiorch picks the new primary among the synchronous standbys) or a pod name; the
# engine removes it once it decided, and writes what it decided to ANN_SWITCHOVER_STATE (JSON, copied
# to status.switchover).
ANN_SWITCHOVER_REQUEST = "pools.multigres.com/switchover-request"
ANN_SWITCHOVER_STATE = "pools.multigres.com/switchover-state"
SWITCHOVER_ANY = "any"
# On the MultigresShard: agent's backup verdict (JSON) and topology-cleanup handshake on delete.
ANN_BACKUP_HEALTH = "pools.multigres.com/backup-health"
ANN_TOPOLOGY_CLEANUP = "pools.multigres.com/topology-cleanup"
# Backups run by the agent (agent/backup_schedule.py, docs/operations.md "Backups"). On the pod that
# takes a base backup, written before the Backup RPC and removed after it (JSON: jobId, type,
# startedAt, holder): a drain of that pod waits while it is there, and the planner avoids the pod.
ANN_BACKUP_RUNNING = "pools.multigres.com/backup-running"
# On the MultigresShard, set by a human: one of BackupType; the agent removes it when it starts that backup.
ANN_BACKUP_REQUEST = "pools.multigres.com/backup-request"
# On the MultigresShard, written by the agent (JSON): the schedule times handled, the running and the
# last backup, and what a due backup waits for; the engine copies it to status.backup.
ANN_BACKUP_STATE = "pools.multigres.com/backup-state"
# Bootstrap guard (state/bootstrap.py, docs/operations.md "Disaster recovery"). On each v0.1.0 pool pod: what
# its init container REPOSITORY_CHECK_CONTAINER allows on an empty data directory, one of Bootstrap
# (initdb: a new shard may start; recovery: only a restore from a complete backup may). On the
# shard's filesystem backup PVC: the newest backup id the shard recorded (status.backup.last), so the
# fact that it had backups outlives the MultigresShard (the PVC is Retained by default).
ANN_BOOTSTRAP = "pools.multigres.com/bootstrap"
ANN_BACKUP_RECORDED = "pools.multigres.com/backup-recorded"
REPOSITORY_CHECK_CONTAINER = "repository-check"
# On a v0.1.0 pool pod, written by the agent (JSON, agent/restore_watch.py): its pooler's restore from
# the repository (or first backup), from v0.1.0's Status postgres_action: state (RestoreState),
# startedAt, and once over finishedAt, backupId (the newest complete backup the agent's health check
# saw, which is what v0.1.0 restores) and walPosition (the replay position then). status.restore
# and the condition Restoring are built from it.
ANN_RESTORE = "pools.multigres.com/restore"
# The restore drill (plan/drill.py, docs/operations.md "Restore drill"). On the MultigresShard, set by a
# human (any value): run a drill now; the engine removes it when the drill starts. ANN_RESTORE_DRILL is
# the engine's own record there (JSON: the schedule time handled, the drill running, the last result,
# when a backup was last verified), copied to status.backup; on the drill pod it names the backup.
ANN_RESTORE_DRILL_REQUEST = "pools.multigres.com/restore-drill-request"
ANN_RESTORE_DRILL = "pools.multigres.com/restore-drill"
RESTORE_DRILL_CONTAINER = "restore-drill"
# A clone (spec.backup.cloneFrom, v0.1.0 filesystem repositories; docs/operations.md "Clone a shard").
# ANN_CLONE is the engine's record on the MultigresShard (JSON, plan/clone.py): the source, the copy
# of its repository into this shard's backup PVC (state CloneState, the copy pod, when, what backups).
# ANN_CLONE_ELECTION is the agent's (JSON, agent/clone_election.py): once the copy is done and every
# pooler restored it, the one certified rule change that makes this shard's poolers the cohort
# (state ElectionState, term, leader, frozenLsn, outgoingRule, at, message).
ANN_CLONE = "pools.multigres.com/clone"
ANN_CLONE_ELECTION = "pools.multigres.com/clone-election"
CLONE_COPY_CONTAINER = "clone-copy"
# On a v0.1.0 pool pod, written by the agent (agent/stuck_start.py): its multipooler has been
# starting a PostgreSQL that is not running for longer than the agent's --stuck-start-after, which
# v0.1.0 never starts again by itself; the value is when that start began (RFC 3339). The engine drains
# the pod so it is recreated on its volume (plan/stuck.py); the agent takes the mark away if
# PostgreSQL runs again first.
ANN_POSTGRES_STUCK = "pools.multigres.com/postgres-stuck"
# On a data PVC, written by the engine (plan/stuck.py): the uid of the pod whose PostgreSQL stayed
# down on this volume and was recreated on it. A later pod stuck on the same volume has the volume
# discarded with it (ANN_DELETE_WITH_POD; a fresh one restores from the backup repository), as a
# diverged old primary never starts as a standby on its own data; a Ready pod on it clears the mark.
ANN_POSTGRES_STUCK_ON = "pools.multigres.com/postgres-stuck-on"
# The drain blocked-reason while the pod takes a backup.
DRAIN_BLOCKED_BACKUP = "backup-in-progress"
ANN_TOPOLOGY_CLEANUP_REQUESTED_AT = "pools.multigres.com/topology-cleanup-requested-at"

# On the MultigresShard, set by a human: "true" stops every write the engine would make to the
# shard's objects (status is still reported); "false" or absent lets it act. Any other value is
# treated as paused, the safe reading of a typo (plan/pause.py).
ANN_PAUSED = "pools.multigres.com/paused"
PAUSED_TRUE = "true"
PAUSED_FALSE = "false"

# On the ConfigMaps the engine writes: the data keys it applied (sorted, comma-separated). A key listed
# here that the engine no longer renders is dropped by the next apply; keys others added stay.
ANN_CONFIG_KEYS = "pools.multigres.com/config-keys"

# On the PVCs the engine creates for a MultigresShard: that shard's name. A PVC kept by
# whenDeleted=Retain has no ownerReference (the garbage collector would take it), so this is what
# proves it is the shard's (state/ownership.py); a MultigresShard re-created under the same name takes its
# retained PVCs back. Set it by hand to hand a PVC to a shard (docs/reconcile.md, "Ownership").
ANN_OWNER_SHARD = "pools.multigres.com/owner-shard"

# On the generated pgBackRest TLS Secret: fingerprint of the names it was issued for.
ANN_TLS_FINGERPRINT = "pools.multigres.com/tls-fingerprint"
# On the generated CA and certificate Secrets (plan/tls_policy.py): when the signing CA or the certificate
# was issued and when it expires (RFC 3339), so the pure planner renews them without reading key
# material. The CA Secret names its signing CA (ANN_TLS_CA_ID, the CA's subject key identifier) and,
# while a successor CA is published but not yet signing, since when (ANN_TLS_CA_STAGED_AT); the
# certificate Secret names the CA that signed it (ANN_TLS_ISSUER).
ANN_TLS_ISSUED_AT = "pools.multigres.com/tls-issued-at"
ANN_TLS_NOT_AFTER = "pools.multigres.com/tls-not-after"
ANN_TLS_CA_ID = "pools.multigres.com/tls-ca-id"
ANN_TLS_CA_STAGED_AT = "pools.multigres.com/tls-ca-staged-at"
ANN_TLS_ISSUER = "pools.multigres.com/tls-issuer"

# --- finalizers ----------------------------------------------------------------------------------
# On pool pods: the agent unregisters the pooler before the pod object may disappear.
FINALIZER_POD = "pools.multigres.com/pooler-unregister"
# On the MultigresShard: the engine cleans up children and requests topology cleanup.
FINALIZER_SHARD = "pools.multigres.com/shard-cleanup"


class ShardCondition(StrEnum):
    """Every condition type of a MultigresShard's status (status.py writes them; the operator, the
    status screen and the alerts read them). Ready, Reconciling and Stalled are kstatus's."""

    READY = "Ready"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"
    AVAILABLE = "Available"
    ROLLING_UPDATE = "RollingUpdate"
    SCALE_DOWN_BLOCKED = "ScaleDownBlocked"
    CONFIGURATION_VALID = "ConfigurationValid"
    BACKUP_HEALTHY = "BackupHealthy"
    # False while a pod's drain-state annotation holds an unknown value (state/drain_annotations.py).
    DRAIN_ANNOTATIONS_VALID = "DrainAnnotationsValid"
    # False while spec.pools.<pool>.decommission names something that is not a pod of that pool.
    DECOMMISSION_VALID = "DecommissionValid"
    # True while a disruptive action waits for spec.maintenanceWindows; the message says what and until when.
    WAITING_FOR_MAINTENANCE_WINDOW = "WaitingForMaintenanceWindow"
    # True while the pause annotation holds every write back (plan/pause.py); the message lists them.
    PAUSED = "Paused"
    # True while pods listed in spec.pools.<pool>.fenced are out of the synchronous set (the message
    # names them); FenceRefused is True while a listed pod is not fenced and says why (the primary, the
    # durability policy, an unreachable pooler). Both repeat the agent's pod condition Fenced.
    FENCED = "Fenced"
    FENCE_REFUSED = "FenceRefused"
    # True while something is stuck (status/stalls.py): what the operator derives from the pods (AgentStalled;
    # DrainStalled repeats the pod condition of the same name) and the agent's topology verdict.
    AGENT_STALLED = "AgentStalled"
    DRAIN_STALLED = "DrainStalled"
    TOPOLOGY_UNREACHABLE = "TopologyUnreachable"
    # True while objects carry the shard's labels without being the shard's (state/ownership.py); the message
    # names them. They are ignored: never counted, patched, deleted or adopted.
    FOREIGN_OBJECTS = "ForeignObjects"
    # True while a pool pod has a container waiting for something that will not come by itself (a bad
    # image, a missing Secret key, a crash loop; status/pod_stuck.py); the message names pod, container and reason.
    PODS_STUCK = "PodsStuck"
    # True while a pool pod's PostgreSQL is out of recovery although another pooler leads the shard: the
    # agent keeps such a pod unready (its readiness gate); the message names the pods and the leader.
    WRITABLE_STANDBY = "WritableStandby"
    # True while a pool pod's init container refuses to let PostgreSQL initialise on an empty data
    # directory: the shard had backups (or spec.backup.bootstrap is recovery) and the repository holds
    # none, so v0.1.0 would bootstrap a new, empty shard (state/bootstrap.py).
    BOOTSTRAP_REFUSED = "BootstrapRefused"
    # True while a pool pod's pooler restores from the repository or creates the shard's first backup
    # (the agent's keys.ANN_RESTORE); status.restore says what was restored.
    RESTORING = "Restoring"
    # Whether the last restore drill brought the newest backup up in a throwaway pod and a query answered
    # (plan/drill.py); present once a drill ended.
    BACKUP_VERIFIED = "BackupVerified"
    # A clone (spec.backup.cloneFrom): True while its source's repository is copied, restored and its
    # own cohort's first primary elected; False (reason Cloned) after; status.clone tells the story.
    CLONING = "Cloning"


# The status of each condition that means something waits or is wrong: what `multigres-pools status`
# lists under "blocked". Reconciling and RollingUpdate are normal work, not listed.
SHARD_CONDITION_ATTENTION = {
    ShardCondition.READY: "False", ShardCondition.STALLED: "True", ShardCondition.AVAILABLE: "False",
    ShardCondition.SCALE_DOWN_BLOCKED: "True", ShardCondition.CONFIGURATION_VALID: "False",
    ShardCondition.BACKUP_HEALTHY: "False", ShardCondition.DRAIN_ANNOTATIONS_VALID: "False",
    ShardCondition.DECOMMISSION_VALID: "False", ShardCondition.WAITING_FOR_MAINTENANCE_WINDOW: "True",
    ShardCondition.PAUSED: "True", ShardCondition.AGENT_STALLED: "True", ShardCondition.DRAIN_STALLED: "True",
    ShardCondition.TOPOLOGY_UNREACHABLE: "True", ShardCondition.FOREIGN_OBJECTS: "True",
    ShardCondition.FENCED: "True", ShardCondition.FENCE_REFUSED: "True", ShardCondition.PODS_STUCK: "True",
    ShardCondition.WRITABLE_STANDBY: "True", ShardCondition.BOOTSTRAP_REFUSED: "True",
    ShardCondition.BACKUP_VERIFIED: "False",
}
# The pod condition the agent sets while a drain step is stuck past --stall-after.
POD_CONDITION_DRAIN_STALLED = ShardCondition.DRAIN_STALLED.value
# The pod condition the agent keeps on a pod listed in spec.pools.<pool>.fenced (True: fenced; False:
# not, and the reason says why), and its reasons.
POD_CONDITION_FENCED = ShardCondition.FENCED.value
# The readiness gate of every v0.1.0 pool pod: the agent sets it True once the pod's PostgreSQL is in
# recovery, or out of it as the leader the newest rule names, and False while it is writable beside
# another leader. Without the agent's word a pod never turns Ready (docs/agent.md, "Readiness gate").
POD_READINESS_GATE = "pools.multigres.com/recovery-matches-role"


class RecoveryGateReason(StrEnum):
    LEADER = "Leader"
    STANDBY = "InRecovery"
    WRITABLE_STANDBY = ShardCondition.WRITABLE_STANDBY.value


class FenceReason(StrEnum):
    FENCED = "Fenced"
    PRIMARY = "IsPrimary"
    DURABILITY = "DurabilityPolicy"
    UNSUPPORTED = "UnsupportedVersion"
    PENDING = "Pending"  # the pooler or the primary cannot be read now; retried every pass
    UNFENCED = "Unfenced"


class DrainState(StrEnum):
    """Values of ANN_DRAIN_STATE, in the order a drain walks them (contract §3.4)."""

    REQUESTED = "requested"
    DRAINING = "draining"
    ACKNOWLEDGED = "acknowledged"
    READY_FOR_DELETION = "ready-for-deletion"


DRAIN_ORDER: tuple[DrainState, ...] = tuple(DrainState)


class DrainReason(StrEnum):
    SCALE_DOWN = "scale-down"
    ROLLING_UPDATE = "rolling-update"
    EXTERNAL_DELETION = "external-deletion"
    FILESYSTEM_RESIZE = "filesystem-resize"
    DRAINED_DISCARD = "drained-discard"
    DECOMMISSION = "decommission"  # spec.pools.<pool>.decommission names the pod
    NODE_MAINTENANCE = "node-maintenance"  # its node is cordoned (kubectl drain): plan/maintenance.py
    SWITCHOVER = "switchover"  # the primary, asked to move away (ANN_SWITCHOVER_REQUEST): plan/switchover.py
    POSTGRES_STUCK = "postgres-stuck"  # its PostgreSQL stays down (ANN_POSTGRES_STUCK): plan/stuck.py


class BackupType(StrEnum):
    """Base backup types of the Multigres Backup RPC (pgBackRest full, diff, incr)."""

    FULL = "full"
    DIFFERENTIAL = "differential"
    INCREMENTAL = "incremental"


class Bootstrap(StrEnum):
    """spec.backup.bootstrap, and (without AUTO) the value of ANN_BOOTSTRAP on a pool pod."""

    AUTO = "auto"  # recovery once the shard recorded a backup, initdb before
    INITDB = "initdb"  # an empty repository starts a new, empty shard
    RECOVERY = "recovery"  # a pod on an empty volume starts only from a complete backup


class RestoreState(StrEnum):
    """The `state` of ANN_RESTORE."""

    RESTORING = "restoring"
    FIRST_BACKUP = "first-backup"
    RESTORED = "restored"
    INITIALIZED = "initialized"  # after a first backup: a new shard, nothing restored


class CloneState(StrEnum):
    """The `state` of ANN_CLONE: the copy of the source's repository."""

    COPYING = "Copying"
    COPIED = "Copied"
    FAILED = "Failed"


class ElectionState(StrEnum):
    """The `state` of ANN_CLONE_ELECTION: the clone's first primary."""

    WAITING = "Waiting"  # not every pooler restored the copy yet, or its LSN still moves
    ELECTED = "Elected"  # a primary of this shard's own cohort exists
    FAILED = "Failed"  # the last attempt failed (message); the agent tries again


class DrillResult(StrEnum):
    """The `result` of a restore drill (ANN_RESTORE_DRILL's `last`)."""

    VERIFIED = "Verified"
    FAILED = "Failed"


class Role(StrEnum):
    """Values of LABEL_ROLE published by the agent from the pooler record's type."""

    PRIMARY = "PRIMARY"
    REPLICA = "REPLICA"
    DRAINED = "DRAINED"


class TopologyCleanup(StrEnum):
    REQUESTED = "requested"
    DONE = "done"
    SKIPPED = "skipped"


# On a data PVC: the uid of the pod whose removal must take the PVC with it (DRAINED pods' data is
# known-bad). Written by the engine together with that pod's drain request, so the decision
# survives the pod object; the PVC is deleted once no pod is left at its index.
ANN_DELETE_WITH_POD = "pools.multigres.com/delete-with-pod"

# --- added by the render engineer (issue 3) ------------------------------------------------------
# Prometheus scrape annotations on pool pods (contract §3.3).
ANN_PROMETHEUS_SCRAPE = "prometheus.io/scrape"
ANN_PROMETHEUS_PORT = "prometheus.io/port"
ANN_PROMETHEUS_PATH = "prometheus.io/path"


class MultigresVersion(StrEnum):
    """The Multigres contract a shard's binaries speak: `spec.multigres.version`.

    It picks the pod layout and the agent's data-plane adapter; it is declared, never guessed."""

    V0_1_0 = "v0.1.0"  # the release (2026-05-29); shared/reference/multigres-v0.1.md
    ERA_A = "d782aa06"  # the pre-release build of era A; shared/reference/multigres-contract.md


DEFAULT_MULTIGRES_VERSION = MultigresVersion.V0_1_0

# --- leader election (issue 13) ------------------------------------------------------------------
# The default Lease names, and the environment variable naming the write-fence file the operator
# hands its ansible runs (module_utils/write_fence.py).
OPERATOR_LEASE_NAME = "multigres-pools-operator"
AGENT_LEASE_NAME = "multigres-pools-agent"
ENV_WRITE_FENCE = "MULTIGRES_POOLS_WRITE_FENCE"

# --- stalls (issue 13): what shows that a pool no longer moves ---------------------------------------
# On the MultigresShard: the agent's topology verdict (JSON: reachable, since, message), written when
# the topology etcd has been unreadable for --topology-stall-after and again when it is read again.
ANN_TOPOLOGY_HEALTH = "pools.multigres.com/topology-health"
# The operator's threshold for AgentStalled, in seconds; `--agent-stall-after` sets it for the
# operator and the playbook runs it starts (the shard_reconcile module reads it too).
ENV_AGENT_STALL_AFTER = "MULTIGRES_POOLS_AGENT_STALL_AFTER"
