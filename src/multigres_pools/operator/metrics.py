"""Prometheus metrics of the operator, in their own registry so tests can read them in isolation."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ..lease import leadership_metrics

_DURATION_BUCKETS = (0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
_DECISION_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1)
_OVERHEAD_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.reconciles = Counter("multigres_pools_operator_reconciles_total",
                                  "Reconcile passes (decided in process, or run through the playbook) by result "
                                  "(converged/progressing/invalid/error/canceled).",
                                  ["result"], registry=r)
        self.duration = Histogram("multigres_pools_operator_reconcile_duration_seconds",
                                  "Wall time of one reconcile run, runner start to finish.",
                                  buckets=_DURATION_BUCKETS, registry=r)
        self.runner_overhead = Histogram("multigres_pools_operator_runner_start_overhead_seconds",
                                         "Seconds from calling ansible-runner to the reconcile task start.",
                                         buckets=_OVERHEAD_BUCKETS, registry=r)
        self.queue_depth = Gauge("multigres_pools_operator_queue_depth",
                                 "Shards waiting to be reconciled (not counting running ones).", registry=r)
        self.running = Gauge("multigres_pools_operator_reconciles_running",
                             "Reconcile runs in progress.", registry=r)
        self.concurrency = Gauge("multigres_pools_operator_max_concurrent_reconciles",
                                 "Concurrency limit derived from the container CPU limit.", registry=r)
        self.decisions = Counter("multigres_pools_operator_decisions_total",
                                 "In-process decisions by verdict: no-op (no run), or why a playbook run was "
                                 "needed (actions, status, full check, decision failed).", ["verdict"], registry=r)
        self.decision_duration = Histogram("multigres_pools_operator_decision_duration_seconds",
                                           "Seconds one in-process decision (render, plan, status) took.",
                                           buckets=_DECISION_BUCKETS, registry=r)
        self.runner_runs = Counter("multigres_pools_operator_runner_runs_total",
                                   "ansible-runner runs of the reconcile playbook (one per batch).", registry=r)
        self.cache_objects = Gauge("multigres_pools_operator_cache_objects",
                                   "Objects held in the watch caches.", registry=r)
        self.leader, self.leadership_changes = leadership_metrics(r, "multigres_pools_operator")
