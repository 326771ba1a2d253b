"""The operator process against the real API server: watches, event filtering, leader election,
health endpoints, metrics and graceful shutdown. The playbook is the test double from
tests/unit/operator/playbook (the real reconcile is covered by test_story.py). The operator runs as
the install bundle's ServiceAccount with exactly the bundle's RBAC (its Lease in the install
namespace, as installed); the test acts as admin."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.core.naming import ShardId
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, connect

from multigres_pools.install import bundle, monitoring
from multigres_pools.playground.localstack import Process, free_port, http_get, reconcile_count, wait_for
from tests.helpers import promql, service_accounts

PLAYBOOK = Path(__file__).parents[1] / "unit" / "operator" / "playbook" / "reconcile.yml"
SPEC = {"clusterName": "op", "globalTopoServer": {"address": "127.0.0.1:2379"}, "pools": {"main": {"cells": ["z1"]}}}


LEASE = ("coordination.k8s.io/v1", "Lease", keys.INSTALL_NAMESPACE)


def lease_name(namespace: str) -> str:
    """Each test's operators elect through their own Lease in the install namespace."""
    return f"{keys.OPERATOR_LEASE_NAME}-{namespace}"


def operator(kubeconfig: Path, namespace: str, tmp: Path, identity: str, *extra: str) -> tuple[Process, int]:
    port = free_port()
    proc = Process(identity, [sys.executable, "-m", "multigres_pools.operator", "-n", namespace,
                              "--kubeconfig", str(kubeconfig), "--playbook", str(PLAYBOOK),
                              "--lease-namespace", keys.INSTALL_NAMESPACE, "--lease-name", lease_name(namespace),
                              "--health-addr", f"127.0.0.1:{port}", "--identity", identity,
                              "--artifacts-dir", str(tmp / identity), "--log-format", "text",
                              "--coalesce", "0.05", *extra], tmp / f"{identity}.log")
    return proc.start(), port


def shard(kube: KubeClient, namespace: str, name: str, **spec: object) -> dict:
    doc = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
           "metadata": {"name": name, "namespace": namespace},
           "spec": {**SPEC, "globalTopoServer": {**SPEC["globalTopoServer"], "rootPath": f"/multigres/{name}"}, **spec}}
    return kube.apply(doc, "test")


@pytest.fixture
def operator_kubeconfig(kube, namespace, tmp_path) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """A token kubeconfig of the bundle's operator ServiceAccount, its RBAC installed for `namespace`."""
    admin = connect(str(kube.kubeconfig))
    try:
        with service_accounts.installed_rbac(admin, namespace) as tokens:
            path = tmp_path / "operator.kubeconfig"
            yield service_accounts.kubeconfig(kube.kubeconfig, tokens[bundle.OPERATOR], path)
            admin.delete(*LEASE, lease_name(namespace))
    finally:
        admin.close()


def test_operator_reconciles_on_relevant_events_only(operator_kubeconfig, namespace, kube_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc, port = operator(operator_kubeconfig, namespace, tmp_path, "op-a")
    try:
        wait_for(lambda: http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 60, "readyz")
        assert http_get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        lease = kube_client.get(*LEASE, lease_name(namespace))
        assert lease and lease["spec"]["holderIdentity"] == "op-a"

        cr = shard(kube_client, namespace, "steady")
        wait_for(lambda: reconcile_count(port, "converged") >= 1, 60, "the first reconcile")

        # A status write (what the module does every pass) must not trigger a run.
        before = reconcile_count(port)
        kube_client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, "steady",
                                {"status": {"phase": "Healthy"}}, field_manager="test", subresource="status")
        # A pod that belongs to another shard must not either.
        other = ShardId("other", "postgres", "default", "0-inf")
        kube_client.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "stranger", "namespace": namespace, "labels": labels.pool_labels(other, "main", "z1")},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, "test")
        # ...while a pod owned by our shard does.
        owner = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "steady",
                 "uid": cr["metadata"]["uid"]}
        sid = ShardId("op", "postgres", "default", "0-inf")
        kube_client.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "ours", "namespace": namespace, "labels": labels.pool_labels(sid, "main", "z1"),
            "ownerReferences": [owner]}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, "test")
        wait_for(lambda: reconcile_count(port) >= before + 1, 30, "a run for the owned pod")
        settled = reconcile_count(port)
        shard(kube_client, namespace, "steady", pools={"main": {"cells": ["z1"], "replicasPerCell": 2}})
        wait_for(lambda: reconcile_count(port) >= settled + 1, 30, "a run for the spec change")

        # requeue_after from the module schedules the next run without any event.
        shard(kube_client, namespace, "waiting")
        wait_for(lambda: reconcile_count(port, "progressing") >= 2, 60, "a requeued second run")

        # An invalid spec is not retried in a hot loop.
        shard(kube_client, namespace, "invalid")
        wait_for(lambda: reconcile_count(port, "invalid") >= 1, 60, "the invalid run")
        invalid_runs = reconcile_count(port, "invalid")
        kube_client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, "invalid",
                                {"metadata": {"annotations": {"touched": "1"}}}, field_manager="test")
        time.sleep(2)
        assert reconcile_count(port, "invalid") == invalid_runs

        _, body = http_get(f"http://127.0.0.1:{port}/metrics")
        for metric in ("multigres_pools_operator_reconcile_duration_seconds_bucket",
                       "multigres_pools_operator_runner_start_overhead_seconds_count",
                       "multigres_pools_operator_queue_depth", "multigres_pools_operator_leader 1.0"):
            assert metric in body
        # The alerts' operator metrics, as a real scrape shows them; per-shard conditions from the cache.
        wanted = promql.alert_metrics(monitoring.ALERTS, "multigres_pools_operator_")
        assert wanted and wanted <= promql.exported_series(body), wanted - promql.exported_series(body)
        assert 'multigres_pools_build_info{component="operator"' in body
        # A condition the engine would write reaches the per-shard series through the watch cache.
        blocked = {"type": "ScaleDownBlocked", "status": "True", "reason": "HealthGate", "message": "not Ready: x"}
        kube_client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, "steady",
                                {"status": {"conditions": [blocked]}}, field_manager="test", subresource="status")
        series = ('multigres_pools_operator_shard_condition'
                  f'{{condition="ScaleDownBlocked",namespace="{namespace}",shard="steady"}} 1.0')
        wait_for(lambda: series in http_get(f"http://127.0.0.1:{port}/metrics")[1], 30, "the shard's condition series")
    finally:
        code = proc.stop()
    assert code == 0, proc.tail()
    lease = kube_client.get(*LEASE, lease_name(namespace))
    assert lease and not lease["spec"].get("holderIdentity")  # released on a clean shutdown


def test_only_the_leader_acts(operator_kubeconfig, namespace, kube_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    first, port1 = operator(operator_kubeconfig, namespace, tmp_path, "op-1")
    try:
        wait_for(lambda: http_get(f"http://127.0.0.1:{port1}/readyz")[0] == 200, 60, "leader ready")
        second, port2 = operator(operator_kubeconfig, namespace, tmp_path, "op-2")
        try:
            wait_for(lambda: http_get(f"http://127.0.0.1:{port2}/healthz")[0] == 200, 60, "follower alive")
            shard(kube_client, namespace, "steady")
            wait_for(lambda: reconcile_count(port1) >= 1, 60, "the leader's run")
            assert http_get(f"http://127.0.0.1:{port2}/readyz")[0] == 503
            assert reconcile_count(port2) == 0
            assert first.stop() == 0  # releases the Lease: the follower takes over at once
            wait_for(lambda: http_get(f"http://127.0.0.1:{port2}/readyz")[0] == 200, 30, "failover")
            wait_for(lambda: reconcile_count(port2) >= 1, 60, "the new leader's initial run")
        finally:
            assert second.stop() == 0, second.tail()
    finally:
        first.stop()
