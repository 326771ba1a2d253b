"""The monitoring bundle: alert expressions parse and read only metrics the agent and the operator
export, per-shard alerts keep the shard's labels, every runbook link lands on a section of
docs/operations.md, and `promtool check rules` accepts the rules file where promtool is installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from prometheus_client import generate_latest

from multigres_pools.agent.metrics import Metrics as AgentMetrics
from multigres_pools.install import bundle, monitoring
from multigres_pools.operator.metrics import Metrics as OperatorMetrics
from tests.helpers import promql

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "manifests" / "monitoring" / "prometheus-rules.yaml"


def _exported() -> set[str]:
    """Every series name the two programs' registries can export (what their /metrics pages say)."""
    return {name for metrics in (AgentMetrics(), OperatorMetrics())
            for name in promql.exported_series(generate_latest(metrics.registry).decode())}


def _rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def test_every_metric_in_every_alert_expression_is_exported():
    exported = _exported()
    assert {"multigres_pools_build_info", "multigres_pools_agent_leader", "multigres_pools_operator_leader",
            "multigres_pools_operator_shard_condition"} <= exported
    rules = _rules()
    assert len(rules) == len(monitoring.ALERTS) >= 5
    for rule in rules:
        names = promql.metric_names(rule["expr"])
        assert names, rule["alert"]
        unknown = names - exported
        assert not unknown, f"{rule['alert']} reads metrics nobody exports: {sorted(unknown)}"


def test_the_tokenizer_agrees_with_the_promql_parser():
    parser = promql.parser()
    if parser is None:
        pytest.skip("promql-parser is not installed (the tokenizer alone checked the names)")
    for rule in _rules():
        assert promql._names_by_parser(parser, rule["expr"]) == promql._names_by_tokens(rule["expr"]), rule["alert"]


def test_tokenizer_skips_functions_keywords_labels_and_durations():
    expr = ('sum by (job, reason) (increase(a_total{result="error", x=~"b|c"}[15m] offset 5m)) > 0 '
            'and on(instance) (b == 1) or vector(0) unless ignoring(le) c:rate5m')
    assert promql._names_by_tokens(expr) == {"a_total", "b", "c:rate5m"}


def test_alert_shape_severity_and_the_required_set():
    names = set()
    for rule in _rules():
        names.add(rule["alert"])
        assert re.fullmatch(r"[0-9]+[smh]", rule["for"]), rule
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule
    # The list: a stalled drain, a blocked scale-down, stale backups, lost leadership, failing reconciles.
    assert {"MultigresPoolsDrainStalled", "MultigresPoolsScaleDownBlocked", "MultigresPoolsBackupStale",
            "MultigresPoolsOperatorNoLeader", "MultigresPoolsAgentNoLeader", "MultigresPoolsReconcileErrors"} <= names


def _github_anchors(markdown: str) -> set[str]:
    anchors, fenced = set(), False
    for line in markdown.splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return anchors


def test_every_runbook_url_points_at_a_section_of_operations_md():
    anchors = _github_anchors((REPO / "docs" / "operations.md").read_text())
    for rule in _rules():
        url = rule["annotations"]["runbook_url"]
        page, _, anchor = url.partition("#")
        assert page == monitoring.RUNBOOKS and anchor in anchors, f"{rule['alert']}: no section for {url}"


def test_per_shard_alerts_keep_namespace_and_shard_from_a_real_exposition():
    """Feed the metrics the alerts read with one shard's values and check the labels a scrape carries."""
    agent, operator = AgentMetrics(), OperatorMetrics()
    agent.drains_stalled.labels("db", "orders").set(1)
    agent.backup_healthy.labels("db", "orders").set(0)
    agent.drains_completed.labels("db", "orders").inc()
    operator.shard_conditions.source = lambda: [{"metadata": {"namespace": "db", "name": "orders"}, "status": {
        "conditions": [{"type": "ScaleDownBlocked", "status": "True"}, {"type": "Stalled", "status": "False"},
                       {"type": "BackupHealthy", "status": "Unknown"}]}}]
    text = generate_latest(agent.registry).decode() + generate_latest(operator.registry).decode()
    assert 'multigres_pools_agent_drains_stalled{namespace="db",shard="orders"} 1.0' in text
    assert 'multigres_pools_agent_backup_healthy{namespace="db",shard="orders"} 0.0' in text
    assert 'multigres_pools_agent_drains_completed_total{namespace="db",shard="orders"} 1.0' in text
    assert ('multigres_pools_operator_shard_condition{condition="ScaleDownBlocked",namespace="db",shard="orders"} 1.0'
            in text)
    assert 'condition="Stalled",namespace="db",shard="orders"} 0.0' in text
    assert 'condition="BackupHealthy"' not in text  # Unknown: no series, rather than a guess
    assert re.search(r'multigres_pools_build_info\{component="agent",python_version="[^"]+",version="[^"]+"\} 1\.0',
                     text)
    for alert in monitoring.ALERTS:
        if "$labels.shard" in alert.summary:
            assert "by (namespace, shard)" in alert.expr, alert.name


def test_service_monitor_selects_both_metrics_services_on_their_port():
    files = bundle.files()
    monitor = yaml.safe_load(files["monitoring/servicemonitor.yaml"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True  # the shard's namespace label wins over the scraped pod's
    for component in ("operator", "agent"):
        service = yaml.safe_load(files[f"{component}-metrics-service.yaml"])
        deployment = yaml.safe_load(files[f"{component}-deployment.yaml"])
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        (port,) = service["spec"]["ports"]
        container_ports = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
        assert port["name"] == endpoint["port"] == keys.METRICS_PORT_NAME and port["targetPort"] in container_ports
        assert f"{component}-metrics-service.yaml" in yaml.safe_load(files["kustomization.yaml"])["resources"]
    assert yaml.safe_load(files["monitoring/kustomization.yaml"])["resources"] == [
        "scraper-serviceaccount.yaml", "scraper-token.yaml", "scraper-clusterrolebinding.yaml",
        "servicemonitor.yaml", "prometheusrule.yaml"]
    # /metrics needs a token allowed `get /metrics`: the scraper's, bound to the base bundle's reader role.
    token = yaml.safe_load(files["monitoring/scraper-token.yaml"])
    assert endpoint["authorization"]["credentials"] == {"name": token["metadata"]["name"], "key": "token"}
    binding = yaml.safe_load(files["monitoring/scraper-clusterrolebinding.yaml"])
    reader = yaml.safe_load(files["metrics-reader-clusterrole.yaml"])
    assert binding["roleRef"]["name"] == reader["metadata"]["name"]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert binding["subjects"][0]["name"] == token["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert yaml.safe_load(files["monitoring/prometheusrule.yaml"])["spec"] == yaml.safe_load(RULES.read_text())


def _promtool() -> str | None:
    cached = Path.home() / ".cache" / "multigres-pools" / "bin" / "promtool"
    for candidate in (os.environ.get("PROMTOOL"), shutil.which("promtool"), str(cached)):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def test_promtool_check_rules():
    promtool = _promtool()
    if promtool is None:
        pytest.skip("promtool not installed (set PROMTOOL, or put it on PATH or in ~/.cache/multigres-pools/bin)")
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(monitoring.ALERTS)} rules found" in done.stdout
