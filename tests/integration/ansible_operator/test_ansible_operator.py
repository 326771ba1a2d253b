"""The collection under the real operator-sdk Ansible Operator: the `ansible-operator` binary of
ansible-operator-plugins v1.42.0 (built from the Go module proxy), our watches.yaml and the
collection laid out as images/ansible-operator lays them out, and the base image's Python packages
plus ansible-core 2.19 and meta/requirements.txt, against the real apiserver.

The harness runs no kubelet, volume binder or agent: a background thread plays them (the
FakeKubelet marks pods Ready and binds PVCs; the FakeAgent walks drains and publishes roles), so
the steps measure the Ansible Operator's loop. Seconds per step are printed, not asserted
(docs/performance.md records them)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import KubeClient, connect

from multigres_pools.playground.kubelet import FakeKubelet
from multigres_pools.playground.localstack import install_crd
from tests.helpers.fake_agent import FakeAgent
from tests.helpers.polling import eventually
from tests.integration.ansible_operator.rig import AnsibleOperator, install, operator_python
from tests.integration.operator.rig import shard_doc

pytestmark = pytest.mark.cluster
NAME = "aop"
POOL_PODS = f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}"
DEADLINE = 240  # generous: a step is seconds (docs/performance.md); a failure shows the log


class World(threading.Thread):
    """The kubelet, volume binder and agent the harness lacks, every 0.2 s until stopped."""

    def __init__(self, kube: Any, namespace: str) -> None:
        super().__init__(daemon=True)
        self.kubelet = FakeKubelet(kube.api_client())
        self.agent = FakeAgent(kube.api_client(), namespace)
        self.namespace, self.done, self.error = namespace, threading.Event(), None

    def run(self) -> None:
        while not self.done.wait(0.2):
            try:
                self.kubelet.mark_all_ready(self.namespace, POOL_PODS)
                self.kubelet.bind_all_pvcs(self.namespace)
                self.kubelet.mark_deployments_available(self.namespace)
                self.agent.publish_roles()
                self.agent.step()
                self.agent.complete_topology_cleanup(NAME)
            except Exception as exc:  # a write that raced the operator's: the next round retries
                self.error = exc


@pytest.fixture
def operator(kube, namespace, tmp_path) -> Iterator[AnsibleOperator]:  # type: ignore[no-untyped-def]
    client = connect(str(kube.kubeconfig))
    install_crd(client)
    client.close()
    python = operator_python()
    op = AnsibleOperator(python, install(tmp_path, python), kube.kubeconfig, namespace).start()
    world = World(kube, namespace)
    world.start()
    try:
        yield op
    finally:
        world.done.set()
        world.join(10)
        op.stop()


def converged(client: KubeClient, namespace: str, replicas: int) -> bool:
    cr = client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME) or {}
    status = cr.get("status") or {}
    ready = {c.get("type"): c.get("status") for c in status.get("conditions") or []}.get("Ready")
    pods = [p for p in client.list("v1", "Pod", namespace, POOL_PODS)
            if not p["metadata"].get("deletionTimestamp")]
    return (ready == "True" and status.get("observedGeneration") == cr["metadata"].get("generation")
            and len(pods) == replicas and all(not (p["metadata"].get("annotations") or {}).get(keys.ANN_DRAIN_STATE)
                                              for p in pods))


def runs(op: AnsibleOperator) -> int:
    """Playbook runs so far: the reconcile task's start events in the operator's log."""
    return op.log().count('"EventData.Name":"multigres.pools.shard : Reconcile shard ')


def step(client: KubeClient, op: AnsibleOperator, namespace: str, replicas: int, what: str) -> float:
    started, before = time.monotonic(), runs(op)
    try:
        eventually(lambda: converged(client, namespace, replicas), DEADLINE, what, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- ansible-operator log (tail) ---\n{op.log()[-6000:]}") from None
    seconds = time.monotonic() - started
    print(f"ansible-operator: {what}: {seconds:.1f} s, {runs(op) - before} playbook runs")
    return seconds


def failed_runs(log: str) -> list[str]:
    """Lines of the operator's log that report a failed run or a reconcile error."""
    return [line for line in log.splitlines()
            if re.search(r"failed=[1-9]|unreachable=[1-9]|Reconciler error|received failed task event"
                         r"|No module named|Error from event API|Traceback", line)]


def test_create_and_scale_converge_with_no_failed_run(kube, namespace, operator):  # type: ignore[no-untyped-def]
    client = connect(str(kube.kubeconfig))
    try:
        client.create(shard_doc(namespace, NAME, replicas=3), field_manager="test")
        times = {"create (3 replicas)": step(client, operator, namespace, 3, "create (3 replicas)")}
        for replicas in (4, 3):
            what = f"scale to {replicas}"
            client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME,
                               {"spec": {"pools": {"main": {"replicasPerCell": replicas}}}}, field_manager="test")
            times[what] = step(client, operator, namespace, replicas, what)
        log = operator.log()
        # The requeues came from our requeue_after task, and the proxy watches the owned pods
        # although the module writes them with server-side apply.
        assert "Set the reconciliation to occur after" in log
        assert '"msg":"Watching child resource","kind":"/v1, Kind=Pod"' in log, log[-4000:]
        # So a pod deleted from outside brings a reconcile of its own (not the 60 s resync).
        mark = len(log)
        victim = sorted(p["metadata"]["name"] for p in client.list("v1", "Pod", namespace, POOL_PODS))[-1]
        client.delete("v1", "Pod", namespace, victim)
        times["pod deleted"] = step(client, operator, namespace, 3, "pod deleted")
        log = operator.log()
        assert "Reconciling due to dependent resource deletion" in log[mark:], log[mark:][-4000:]

        # Deletion (issue #28): the Ansible Operator runs the playbook for the deleted shard because
        # watches.yaml names the module's finalizer, and the shard goes once the cleanup is done.
        started = time.monotonic()
        client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME)
        try:
            eventually(lambda: client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME) is None,
                       DEADLINE, "the deleted MultigresShard to go", interval=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- ansible-operator log (tail) ---\n{operator.log()[-6000:]}") from None
        times["delete"] = time.monotonic() - started
        log = operator.log()
        assert "Resource is terminated, skipping reconciliation" not in log
        assert failed_runs(log) == [], "\n".join(failed_runs(log))
        assert operator.alive()
        print("ansible-operator steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    finally:
        client.close()
