"""Prometheus metrics of the agent, in their own registry so tests can read them without globals.

Everything about one shard's drains or backups carries `namespace` and `shard` (the MultigresShard's
name) so alerts name the shard to look at; docs/operations.md lists the alerts built on them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ..lease import leadership_metrics
from ..version import register_build_info

_P = "multigres_pools_agent"
_SHARD = ["namespace", "shard"]


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.drain_state_seconds = Histogram(
            f"{_P}_drain_state_duration_seconds", "Time a pod spent in a drain state before leaving it.",
            [*_SHARD, "state"], registry=r, buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600))
        self.drain_total_seconds = Histogram(
            f"{_P}_drain_duration_seconds", "Time from drain requested to ready-for-deletion.",
            _SHARD, registry=r, buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600))
        self.drain_failures = Counter(
            f"{_P}_drain_failures_total", "Drain steps that could not advance, by reason.", [*_SHARD, "reason"],
            registry=r)
        self.drain_forced = Counter(
            f"{_P}_drain_forced_total", "Drain steps forced by the force annotation.", [*_SHARD, "state"],
            registry=r)
        self.drains_completed = Counter(
            f"{_P}_drains_completed_total", "Drains that reached ready-for-deletion.", _SHARD, registry=r)
        self.drains_stalled = Gauge(
            f"{_P}_drains_stalled", "Pods whose drain is stalled past the threshold.", _SHARD, registry=r)
        self.topology_reachable = Gauge(
            f"{_P}_topology_reachable", "1 when the last read of the shard's topology etcd worked, 0 when it "
            "failed (TopologyUnreachable=True once it failed for --topology-stall-after).", _SHARD, registry=r)
        self.role_publish_lag = Histogram(
            f"{_P}_role_publish_lag_seconds",
            "From reading a changed pooler role in etcd to the pod label being written.",
            registry=r, buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
        self.handover_seconds = Histogram(
            f"{_P}_primary_handover_seconds",
            "From the primary's pod terminating to another pooler being the confirmed primary.",
            _SHARD, registry=r, buckets=(0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120))
        self.role_changes = Counter(f"{_P}_role_changes_total", "Role labels written.", ["role"], registry=r)
        self.poolers_pruned = Counter(f"{_P}_poolers_pruned_total", "Pooler records pruned.", registry=r)
        self.last_backup_age = Gauge(
            f"{_P}_last_backup_age_seconds", "Age of the newest complete backup.", _SHARD, registry=r)
        self.backup_healthy = Gauge(
            f"{_P}_backup_healthy", "1 when the newest complete backup is within the shard's healthThreshold, "
            "0 when it is older or there is none (the BackupHealthy condition).", _SHARD, registry=r)
        self.leader, self.leadership_changes = leadership_metrics(r, _P)
        self.reconcile_errors = Counter(
            f"{_P}_reconcile_errors_total", "Shard passes that failed, by reason.", ["reason"], registry=r)
        self.build_info = register_build_info(r, "agent")
