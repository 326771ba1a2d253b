"""The demo's story as an end-to-end test: the real operator and agent as processes, the real
reconcile playbook, a real API server, and simulated nodes (multipooler test peers).

The story: create 3 replicas, scale up to 5, roll a new image, scale down to 2. Asserts: all pods
and PVCs of a new shard are created in one pass; the primary is updated last in a rolling update;
every scale-down walks requested -> draining -> acknowledged -> ready-for-deletion before its pod is
deleted, and the primary's synchronous standby list loses the standby before the pod goes; killing
the operator and the agent in the middle of a drain loses nothing; a reconcile with no change
writes nothing; deleting the shard completes. The operator and the agent run as the install bundle's
ServiceAccounts with its RBAC, not as admin.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect

from multigres_pools.install import bundle
from multigres_pools.operator.runner import PlaybookRunner
from multigres_pools.playground import demo
from multigres_pools.playground.localstack import LocalStack, PodEvent, PodTimeline, wait_for
from tests.helpers import service_accounts

DRAIN_WALK = [s.value for s in keys.DRAIN_ORDER]

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(demo.missing_pieces()), reason=f"missing: {demo.missing_pieces()}"),
]


def passes(log: str, namespace: str, name: str) -> list[str]:
    """The action summaries of every reconcile pass of one shard, in order (see controller.py)."""
    return re.findall(rf"reconciled {re.escape(namespace)}/{re.escape(name)}: \w+ in \S+; actions: (.*)$", log, re.M)


class MidDrainKiller:
    """Kills the operator and the agent (SIGKILL, no cleanup) the moment the first drain is seen
    under way, then starts them again, as a node failure or an OOM kill would."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.killed_at_state: str | None = None

    def __call__(self, event: PodEvent) -> None:
        if self.killed_at_state is not None or event.drain not in DRAIN_WALK[:-1]:
            return
        self.killed_at_state = event.drain
        assert self.stack.operator is not None and self.stack.agent is not None
        self.stack.operator.kill()
        self.stack.agent.kill()
        self.stack.operator.start()
        self.stack.agent.start()


@pytest.fixture
def stack(kube, topo_etcd, namespace, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The operator and the agent run as the install bundle's ServiceAccounts (token kubeconfigs),
    with exactly the bundle's RBAC for `namespace`; admin only prepares and plays the nodes."""
    admin = connect(str(kube.kubeconfig))
    (tmp_path / "stack").mkdir()
    with service_accounts.installed_rbac(admin, namespace) as tokens:
        as_sa = {a: service_accounts.kubeconfig(kube.kubeconfig, t, tmp_path / "stack" / f"{a}.kubeconfig")
                 for a, t in tokens.items()}
        s = LocalStack(kube.kubeconfig, topo_etcd.endpoint, namespace, tmp_path / "stack",
                       topo_root=f"/e2e/{namespace}", operator_kubeconfig=as_sa[bundle.OPERATOR],
                       agent_kubeconfig=as_sa[bundle.AGENT], lease_namespace=keys.INSTALL_NAMESPACE)
        s.start()
        try:
            wait_for(s.operator_ready, 120, "the operator to become ready")
            yield s
        finally:
            s.stop()
            admin.close()


def test_story(stack: LocalStack, topo_etcd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ns = stack.namespace
    timeline = PodTimeline(stack.kubeconfig, ns)
    timeline.start()
    nodes = stack.nodes
    assert nodes is not None
    doc = demo.demo_shard(demo.load_sample(), ns, f"{topo_etcd.host}:{topo_etcd.port}", stack.topo_root, 3)
    story = demo.Story(stack, doc, demo.Display(io.StringIO()), timeline, timeout=300)
    name = story.name
    try:
        # 1. Create: every PVC and pod in the first pass that creates anything.
        assert story.step("create", demo.with_replicas(doc, 3), 3, None).ok, stack.operator.tail()
        summaries = [s for s in passes(stack.operator.tail(10**7), ns, name) if s != "none"]
        assert summaries, "no reconcile pass recorded"
        kinds = Counter(o["kind"] for o in demo.rendered(doc)[1])
        for kind in ("PersistentVolumeClaim", "Pod"):
            assert f"apply {kind} x{kinds[kind]}" in summaries[0], summaries
        later = [s for s in summaries[1:] if "apply Pod" in s or "apply PersistentVolumeClaim" in s]
        assert not later, f"pods or PVCs created after the first pass: {later}"

        # 2. Scale up.
        assert story.step("scale up", demo.with_replicas(story.doc, 5), 5, None).ok

        # 3. Rolling update: replicas one at a time, the primary last.
        old = {p["metadata"]["uid"]: p["metadata"]["name"] for p in stack.pods()}
        primary = nodes.primary()
        old_primary_uid = next(uid for uid, n in old.items() if n == primary)
        image = demo.next_image(demo.postgres_image(story.doc))
        rolled = demo.with_postgres_image(story.doc, image)
        assert story.step("rolling update", rolled, 5, image).ok, stack.operator.tail()
        gone = {uid: timeline.deleted_at(uid) for uid in old}
        assert all(at is not None for at in gone.values()), gone
        primary_gone = gone.pop(old_primary_uid)
        assert all(at < primary_gone for at in gone.values()), "the primary was not updated last"  # type: ignore[operator]

        # 4. Scale down, killing operator and agent mid-drain.
        before = {p["metadata"]["uid"]: p["metadata"]["name"] for p in stack.pods()}
        primary = nodes.primary()
        assert primary is not None
        killer = MidDrainKiller(stack)
        timeline.listeners.append(killer)
        assert story.step("scale down", demo.with_replicas(story.doc, 2), 2, image).ok, stack.operator.tail()
        timeline.listeners.clear()
        assert killer.killed_at_state in DRAIN_WALK[:-1], "the kill did not happen mid-drain"
        after = {p["metadata"]["uid"]: p["metadata"]["name"] for p in stack.pods()}
        removed = {uid: pod for uid, pod in before.items() if uid not in after}
        assert len(removed) == 3 and primary in after.values()
        for uid, pod in removed.items():
            assert timeline.drain_states(uid) == DRAIN_WALK, (pod, timeline.drain_states(uid))
            events = timeline.of(uid)
            ready_at = next(e.at for e in events if e.drain == keys.DrainState.READY_FOR_DELETION.value)
            deleting_at = next(e.at for e in events if e.deleting or e.type == "DELETED")
            assert deleting_at >= ready_at, f"{pod} was deleted before ready-for-deletion"
            # The standby left the primary's synchronous list before its pod started to go away.
            was_standby = [s for s in nodes.history if s.at <= deleting_at and pod in s.standbys]
            assert was_standby, f"{pod} was never a synchronous standby"
            last_seen = [s for s in nodes.history if s.at <= deleting_at][-1]
            assert pod not in last_seen.standbys, f"{pod} still a sync standby when its pod was deleted"
        assert nodes.primary() == primary
        assert sorted(nodes.sync_standbys()) == sorted(n for n in after.values() if n != primary)
        kube = stack.kube()
        pvcs = kube.list("v1", "PersistentVolumeClaim", ns, keys.LABEL_SHARD)
        # whenScaled: Delete. A deleted PVC keeps its kubernetes.io/pvc-protection finalizer until the
        # pvc-protection controller sees no pod using it: deleted means gone or a deletionTimestamp.
        kept = [p for p in pvcs if keys.LABEL_INDEX in (p["metadata"].get("labels") or {})
                and not p["metadata"].get("deletionTimestamp")]
        assert len(kept) == 2, [p["metadata"]["name"] for p in kept]

        # 5. A reconcile with no change writes nothing (the same playbook the operator runs).
        as_operator = str(stack.operator_kubeconfig or stack.kubeconfig)
        runner = PlaybookRunner(root=tmp_path / "noop", envvars={"KUBECONFIG": as_operator})
        report = runner.run(ns, name)
        if report.module_result is None and report.status == "failed":
            # Once seen in a full run: ansible-playbook failed before any task, without output we kept.
            # What this step checks needs a run that reaches the module, so one more, and say why.
            print(f"no-op run failed before the reconcile task: {report.detail or report.failures}")
            report = runner.run(ns, name)
        res = report.module_result or {}
        assert report.status == "successful" and not res.get("failed"), (res, report.failures, report.detail)
        assert res.get("changed") is False and not res.get("actions"), res
        assert res.get("writes") == 0, res

        # 6. Delete: the finalizer is released and every owned object goes, under the shipped RBAC.
        assert story.delete().ok, stack.operator.tail()
        wait_for(lambda: not stack.pods(), 120, "the shard's pods to be gone")
    finally:
        timeline.stop()
