"""The monitoring bundle (manifests/monitoring/): a ServiceMonitor and a PrometheusRule for the Prometheus
Operator, and the same alerts as a plain Prometheus rules file (`promtool check rules`, or a Prometheus
without the operator). The metrics Services it scrapes are in the base bundle (bundle.py): they need no CRD.

Every alert names the shard when the fact is per shard, and links its runbook section in
docs/operations.md; a unit test checks each metric an expression reads against what the agent and the
operator register, and each runbook anchor against the document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ansible_collections.multigres.pools.plugins.module_utils.render import output

RUNBOOKS = "https://github.com/multigres/pools/blob/main/docs/operations.md"
GROUP = "multigres-pools"
NAME = "multigres-pools"
# Only the agent holding the Lease acts; a replica that lost it would keep exporting its last values.
_ON_AGENT_LEADER = "and on(instance) (multigres_pools_agent_leader == 1)"
_SHARD = "{{ $labels.namespace }}/{{ $labels.shard }}"
_C = keys.ShardCondition


def _condition_true(condition: str) -> str:
    return f'max by (namespace, shard) (multigres_pools_operator_shard_condition{{condition="{condition}"}}) == 1'


def _condition_false(condition: str) -> str:
    return f'min by (namespace, shard) (multigres_pools_operator_shard_condition{{condition="{condition}"}}) == 0'


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str

    @property
    def runbook_anchor(self) -> str:
        """The GitHub anchor of the docs/operations.md heading `### Alert: <name>`."""
        return f"alert-{self.name.lower()}"

    def rule(self) -> Manifest:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "description": self.description,
                            "runbook_url": f"{RUNBOOKS}#{self.runbook_anchor}"},
        }


ALERTS = (
    Alert("MultigresPoolsDrainStalled",
          f"max by (namespace, shard) (multigres_pools_agent_drains_stalled {_ON_AGENT_LEADER}) > 0",
          "5m", "warning",
          f"A pool pod drain in {_SHARD} is stalled",
          f"{{{{ $value }}}} drain(s) in {_SHARD} have not advanced past --stall-after (DrainStalled=True on "
          "the pod); the scale-down or rolling update waits for them."),
    Alert("MultigresPoolsScaleDownBlocked",
          _condition_true(_C.SCALE_DOWN_BLOCKED),
          "30m", "warning",
          f"Scale-down of {_SHARD} is blocked by a health gate",
          f"{_SHARD} has ScaleDownBlocked=True for 30 minutes: the operator will not start the drain of a "
          "replica to remove until the shard is healthy enough to lose it."),
    Alert("MultigresPoolsBackupStale",
          f"min by (namespace, shard) (multigres_pools_agent_backup_healthy {_ON_AGENT_LEADER}) == 0",
          "15m", "warning",
          f"Backups of {_SHARD} are stale",
          f"The newest complete backup of {_SHARD} is older than spec.backup.healthThreshold, or there is none "
          "(BackupHealthy=False)."),
    Alert("MultigresPoolsBackupVerificationFailed",
          _condition_false(_C.BACKUP_VERIFIED),
          "1m", "warning",
          f"The last restore drill of {_SHARD} failed",
          f"The newest backup of {_SHARD} could not be restored, started or queried in a throwaway pod "
          f"({_C.BACKUP_VERIFIED}=False; status.backup.drill.last says why). Until a drill passes, do not count on "
          "that backup for a restore."),
    Alert("MultigresPoolsOperatorNoLeader",
          "(sum(multigres_pools_operator_leader) or vector(0)) < 1",
          "5m", "critical",
          "No multigres-pools operator holds its Lease",
          "No operator instance reports leadership: no shard is reconciled (no scale, drain completion, "
          "rolling update or status update) until one does."),
    Alert("MultigresPoolsAgentNoLeader",
          "(sum(multigres_pools_agent_leader) or vector(0)) < 1",
          "5m", "critical",
          "No multigres-pools agent holds its Lease",
          "No agent instance reports leadership: drains do not advance, role labels and backup health are "
          "not updated, and deleted pods keep their finalizer."),
    Alert("MultigresPoolsReconcileErrors",
          'sum by (job) (increase(multigres_pools_operator_reconciles_total{result="error"}[15m])) > 0',
          "15m", "warning",
          "Operator reconcile passes keep failing",
          "{{ $value | humanize }} reconcile passes ended in error over the last 15 minutes, for 15 minutes "
          "in a row; the failing shards are retried with backoff."),
    Alert("MultigresPoolsShardStalled",
          _condition_true(_C.STALLED),
          "15m", "warning",
          f"{_SHARD} is Stalled: its spec is refused",
          f"{_SHARD} has Stalled=True (ConfigurationValid=False): the operator does not act on this generation "
          "until the spec is fixed."),
    Alert("MultigresPoolsAgentStalled",
          _condition_true(_C.AGENT_STALLED),
          "5m", "critical",
          f"Pool pods of {_SHARD} wait for the agent",
          f"{_SHARD} has {_C.AGENT_STALLED}=True: a pod is Terminating with the agent's finalizer, or a "
          "drain was requested and not taken up, for longer than --agent-stall-after. The pool does not move."),
    Alert("MultigresPoolsPodsStuck",
          _condition_true(_C.PODS_STUCK),
          "15m", "warning",
          f"Pool pods of {_SHARD} are stuck before they run",
          f"{_SHARD} has {_C.PODS_STUCK}=True for 15 minutes: a pool pod's container waits on its image "
          "(ErrImagePull, ImagePullBackOff), its configuration or a crash loop; the condition message names "
          "the pod, the container and the kubelet's reason."),
    Alert("MultigresPoolsWritableStandby",
          _condition_true(_C.WRITABLE_STANDBY),
          "1m", "critical",
          f"A pool pod of {_SHARD} runs PostgreSQL out of recovery beside the leader",
          f"{_SHARD} has {_C.WRITABLE_STANDBY}=True: a pod's PostgreSQL accepts writes although another "
          "pooler leads the shard. The agent keeps it unready; the condition message names it and the leader "
          "(docs/operations.md, \"WritableStandby\")."),
    Alert("MultigresPoolsTopologyUnreachable",
          f"min by (namespace, shard) (multigres_pools_agent_topology_reachable {_ON_AGENT_LEADER}) == 0",
          "5m", "critical",
          f"The agent cannot read the topology etcd of {_SHARD}",
          f"The agent's reads of the topology etcd of {_SHARD} fail ({_C.TOPOLOGY_UNREACHABLE}=True "
          "after --topology-stall-after): drains, role labels and pruning wait."),
    Alert("MultigresPoolsAgentErrors",
          "sum by (job, reason) (increase(multigres_pools_agent_reconcile_errors_total[15m])) > 0",
          "15m", "warning",
          "Agent shard passes keep failing ({{ $labels.reason }})",
          "{{ $value | humanize }} agent shard passes failed with {{ $labels.reason }} over the last 15 minutes; "
          "drains, role labels and backup checks of the affected shards do not advance."),
)


def rule_groups() -> dict[str, Any]:
    """The rules as Prometheus reads them (`groups:`), shared by both files."""
    return {"groups": [{"name": GROUP, "rules": [a.rule() for a in ALERTS]}]}


def _meta(kind: str) -> Manifest:
    return {"name": NAME, "namespace": keys.INSTALL_NAMESPACE,
            "labels": {keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME, keys.LABEL_APP_PART_OF: keys.PART_OF,
                       keys.LABEL_APP_COMPONENT: kind}}


def service_monitor() -> Manifest:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _meta("monitoring"),
        "spec": {
            "selector": {"matchLabels": {keys.LABEL_METRICS: "true"}},
            "namespaceSelector": {"matchNames": [keys.INSTALL_NAMESPACE]},
            # honorLabels: the per-shard `namespace` label is the shard's, not the scraped pod's.
            # The token of the scraper ServiceAccount below: /metrics needs one allowed `get /metrics`.
            "endpoints": [{"port": keys.METRICS_PORT_NAME, "path": "/metrics", "interval": "30s",
                           "honorLabels": True,
                           "authorization": {"type": "Bearer", "credentials": {
                               "name": keys.METRICS_SCRAPER_TOKEN, "key": "token"}}}],
        },
    }


def prometheus_rule() -> Manifest:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": _meta("monitoring"),
            "spec": rule_groups()}


def scraper() -> dict[str, Manifest]:
    """A ServiceAccount bound to the base bundle's metrics-reader ClusterRole, and its token Secret
    (filled in by the token controller) that the ServiceMonitor sends: Prometheus needs no RBAC of its own."""
    sa_meta = {**_meta("monitoring"), "name": keys.METRICS_SCRAPER}
    return {
        "scraper-serviceaccount.yaml": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": sa_meta},
        "scraper-token.yaml": {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {**_meta("monitoring"), "name": keys.METRICS_SCRAPER_TOKEN,
                         "annotations": {"kubernetes.io/service-account.name": keys.METRICS_SCRAPER}}},
        "scraper-clusterrolebinding.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": keys.METRICS_SCRAPER, "labels": _meta("monitoring")["labels"]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": keys.METRICS_READER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": keys.METRICS_SCRAPER,
                          "namespace": keys.INSTALL_NAMESPACE}]},
    }


def files() -> dict[str, str]:
    """{path under the bundle: text}; the kustomization lists the scraper's identity and the two
    Prometheus Operator objects."""
    objects = {**scraper(), "servicemonitor.yaml": service_monitor(), "prometheusrule.yaml": prometheus_rule()}
    texts = {f"monitoring/{name}": output.dump(obj) for name, obj in objects.items()}
    texts["monitoring/prometheus-rules.yaml"] = output.dump(rule_groups())
    texts["monitoring/kustomization.yaml"] = output.dump(output.kustomization(list(objects)))
    return texts
