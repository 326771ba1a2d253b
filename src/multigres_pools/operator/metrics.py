"""Prometheus metrics of the operator, in their own registry so tests can read them in isolation."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..lease import leadership_metrics
from ..version import register_build_info

_DURATION_BUCKETS = (0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
_DECISION_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1)
_OVERHEAD_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10)
SHARD_CONDITION = "multigres_pools_operator_shard_condition"


class ShardConditions(Collector):
    """One series per shard and status condition, read from the watch cache at scrape time: 1 when the
    condition is True, 0 when False, none when Unknown. Only the leader fills its cache, so a standby
    operator exports none. Alerts use it for per-shard state (ScaleDownBlocked, Stalled, ...)."""

    def __init__(self) -> None:
        self.source: Callable[[], Iterable[dict[str, Any]]] = list

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(SHARD_CONDITION, "Status conditions of each MultigresShard (1 True, 0 False).",
                                 labels=["namespace", "shard", "condition"])

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield self._family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        for shard in self.source():
            meta = shard.get("metadata") or {}
            for cond in ShardReader.of(shard).status.conditions:
                value = {"True": 1.0, "False": 0.0}.get(cond.status)
                if value is not None:
                    family.add_metric([meta.get("namespace", ""), meta.get("name", ""), cond.type], value)
        yield family


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
                                 "In-process decisions by verdict: no-op (nothing to write), status (the "
                                 "operator writes the status itself), or why a playbook run was needed "
                                 "(actions, invalid, full check, decision failed).", ["verdict"], registry=r)
        self.status_writes = Counter("multigres_pools_operator_status_writes_total",
                                     "Status-only decisions the operator wrote itself, without a playbook run.",
                                     registry=r)
        self.decision_duration = Histogram("multigres_pools_operator_decision_duration_seconds",
                                           "Seconds one in-process decision (render, plan, status) took.",
                                           buckets=_DECISION_BUCKETS, registry=r)
        self.runner_runs = Counter("multigres_pools_operator_runner_runs_total",
                                   "ansible-runner runs of the reconcile playbook (one per batch).", registry=r)
        self.cache_objects = Gauge("multigres_pools_operator_cache_objects",
                                   "Objects held in the watch caches.", registry=r)
        self.leader, self.leadership_changes = leadership_metrics(r, "multigres_pools_operator")
        self.build_info = register_build_info(r, "operator")
        self.shard_conditions = ShardConditions()
        r.register(self.shard_conditions)
