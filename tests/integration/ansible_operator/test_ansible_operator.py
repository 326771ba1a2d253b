"""The collection under the real operator-sdk Ansible Operator: the `ansible-operator` binary of
ansible-operator-plugins v1.42.0 (built from the Go module proxy), our watches.yaml and the
collection laid out as images/ansible-operator lays them out, and the base image's Python packages
plus ansible-core 2.19 and meta/requirements.txt, against the real apiserver.

The steps (tests/helpers/operator_steps.py) are the ones bench/ansible_operator.py times against our
own operator; here they are checked for what they leave behind. Seconds per step are printed, not
asserted."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, connect
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import ENV_ALLOWED_IMAGES

from multigres_pools.playground.localstack import install_crd
from tests.helpers.operator_steps import (
    ALLOWED_IMAGES,
    DEADLINE,
    NAME,
    Steps,
    World,
    converged,
    draining,
    pool_pod_uids,
    world,
)
from tests.helpers.polling import eventually
from tests.integration.ansible_operator.rig import AnsibleOperator, install, operator_python

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(kube, namespace, tmp_path) -> Iterator[tuple[AnsibleOperator, World]]:  # type: ignore[no-untyped-def]
    client = connect(str(kube.kubeconfig))
    install_crd(client)
    client.close()
    python = operator_python()
    op = AnsibleOperator(python, install(tmp_path, python), kube.kubeconfig, namespace)
    op.env[ENV_ALLOWED_IMAGES] = ALLOWED_IMAGES  # the deployment's env; the runs inherit it
    op.start()
    try:
        with world(kube.api_client(), namespace) as w:
            yield op, w
    finally:
        op.stop()


def runs(op: AnsibleOperator) -> int:
    """Playbook runs so far: the reconcile task's start events in the operator's log."""
    return op.log().count('"EventData.Name":"multigres.pools.shard : Reconcile shard ')


def repeated_owners(client: KubeClient, namespace: str) -> list[str]:
    """Objects that carry an ownerReference to the same owner more than once."""
    found = []
    for kind in ("Secret", "ConfigMap", "Service", "Pod", "PersistentVolumeClaim"):
        for obj in client.list("v1", kind, namespace):
            uids = [o.get("uid") for o in obj["metadata"].get("ownerReferences") or []]
            if len(uids) != len(set(uids)):
                found.append(f"{kind}/{obj['metadata']['name']}: {uids}")
    return found


def failed_runs(log: str) -> list[str]:
    """Lines of the operator's log that report a failed run or a reconcile error."""
    return [line for line in log.splitlines()
            if re.search(r"failed=[1-9]|unreachable=[1-9]|Reconciler error|received failed task event"
                         r"|No module named|Error from event API|Traceback", line)]


def test_create_scale_refuse_delete_a_pod_and_the_shard(kube, namespace, rig):  # type: ignore[no-untyped-def]
    operator, _ = rig
    client = connect(str(kube.kubeconfig))
    steps = Steps(client, namespace, lambda: f"--- ansible-operator log (tail) ---\n{operator.log()[-6000:]}")
    try:
        before = runs(operator)
        steps.create(3)
        steps.scale(4)
        steps.scale(3)  # a drain-safe scale-down: the agent walks the drain
        # The module's own ownerReference, once: the proxy's repeat on the Secrets it POSTs is dropped.
        assert repeated_owners(client, namespace) == []

        # A refused spec changes nothing; its runs fail, as `ansible-playbook` fails on it.
        pods, refusal_mark = pool_pod_uids(client, namespace), len(operator.log())
        steps.refuse()
        assert pool_pod_uids(client, namespace) == pods
        steps.fix_refusal(3)
        refused_mark = len(operator.log())
        log = operator.log()
        # The requeues came from our requeue_after task, and the proxy watches the owned pods
        # although the module writes them with server-side apply.
        assert "Set the reconciliation to occur after" in log
        assert '"msg":"Watching child resource","kind":"/v1, Kind=Pod"' in log, log[-4000:]

        # So a pod deleted from outside brings a reconcile of its own (not the 60 s resync).
        mark = len(log)
        steps.delete_pod(3)
        assert "Reconciling due to dependent resource deletion" in operator.log()[mark:], operator.log()[mark:][-4000:]

        # Deletion (issue #28): the Ansible Operator runs the playbook for the deleted shard because
        # watches.yaml names the module's finalizer, and the shard goes once the cleanup is done.
        steps.delete_shard()
        log = operator.log()
        assert "Resource is terminated, skipping reconciliation" not in log
        assert failed_runs(log[:refusal_mark]) == [], "\n".join(failed_runs(log[:refusal_mark]))
        assert failed_runs(log[refused_mark:]) == [], "\n".join(failed_runs(log[refused_mark:]))
        assert operator.alive()
        print(f"ansible-operator steps (s), {runs(operator) - before} playbook runs: "
              + ", ".join(f"{k} {v:.1f}" for k, v in steps.seconds.items()))
    finally:
        client.close()


def test_a_restart_mid_drain_and_a_deletion_mid_drain_end_cleanly(kube, namespace, rig):  # type: ignore[no-untyped-def]
    """Issue #28's failures: the Ansible Operator restarted while a scale-down's drain waits on the
    agent, then the MultigresShard deleted while another drain waits. Each ends converged (or gone)
    with the drain walked to its end, never a pod deleted before the agent let it go."""
    operator, w = rig
    client = connect(str(kube.kubeconfig))
    steps = Steps(client, namespace, lambda: f"--- ansible-operator log (tail) ---\n{operator.log()[-6000:]}")
    try:
        steps.create(4)
        w.drains_held.set()
        client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME,
                           {"spec": {"pools": {"main": {"replicasPerCell": 3}}}}, field_manager="test")
        (drained,) = eventually(lambda: draining(client, namespace), DEADLINE, "a drain requested", interval=0.1)
        operator.stop()
        assert len(pool_pod_uids(client, namespace)) == 4  # held: nothing deleted under the drain
        mark = len(operator.log())
        operator.start()
        w.drains_held.clear()
        eventually(lambda: converged(client, namespace, 3), DEADLINE, "converged after the restart", interval=0.1)
        assert drained not in {p["metadata"]["name"] for p in client.list("v1", "Pod", namespace)}
        assert failed_runs(operator.log()[mark:]) == [], "\n".join(failed_runs(operator.log()[mark:]))

        w.drains_held.set()
        client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME,
                           {"spec": {"pools": {"main": {"replicasPerCell": 2}}}}, field_manager="test")
        eventually(lambda: draining(client, namespace), DEADLINE, "a second drain requested", interval=0.1)
        client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME)
        w.drains_held.clear()
        eventually(lambda: client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME) is None,
                   DEADLINE, "the shard deleted mid-drain to go", interval=0.1)
        assert failed_runs(operator.log()[mark:]) == [], "\n".join(failed_runs(operator.log()[mark:]))
        assert operator.alive()
    finally:
        client.close()
