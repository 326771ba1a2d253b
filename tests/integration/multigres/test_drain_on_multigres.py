"""Data safety on real Multigres v0.1.0 and PostgreSQL 17, under a steady SQL write load, with the
operator, the agent and a live multiorch: a rolling update replaces one pod at a time and the
primary last, a scale-down deletes only pods that had left the synchronous set, and no write that
PostgreSQL acknowledged is ever missing afterwards. (Order matters: the roll needs 3 replicas.)"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils import facts, keys

from multigres_pools.dataplane.base import ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.localstack import PodTimeline, wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.writeload import SyncSampler, WriteLoad

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]
SHARD = "play"


class Watched:
    """The stack with everything a data-safety claim is judged by running beside it."""

    def __init__(self, stack: MultigresStack) -> None:
        self.stack = stack
        self.timeline = PodTimeline(stack.kubeconfig, stack.namespace)
        self.load = WriteLoad(find_primary=stack.primary_ip, dsn=stack.dsn, interval=0.01)
        self.sync = SyncSampler(find_primary=stack.primary_ip, dsn=stack.dsn)

    def start(self) -> None:
        for thread in (self.timeline, self.load, self.sync):
            thread.start()
        self.load.wait_for_acks(50, timeout=120)

    def stop(self) -> None:
        for thread in (self.load, self.sync, self.timeline):
            if thread.is_alive():
                thread.stop()


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    stack = MultigresStack(tmp_path_factory.mktemp("drain"), progress=lambda line: print(line, flush=True))
    watched = None
    try:
        stack.start()
        stack.apply_shard(stack.sample_shard(replicas=3, name=SHARD))
        stack.wait_serving(SHARD, replicas=3, timeout=300)
        watched = Watched(stack)
        watched.start()
        yield watched
    finally:
        if watched is not None:
            watched.stop()
        stack.stop()


def _apply(stack: MultigresStack, change) -> int:  # type: ignore[no-untyped-def]
    kube = stack.kube()
    try:
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD)
        assert cr is not None
        doc = {"apiVersion": cr["apiVersion"], "kind": cr["kind"], "metadata": {"name": SHARD,
               "namespace": stack.namespace}, "spec": copy.deepcopy(cr["spec"])}
        change(doc["spec"])
        return int(stack.apply_shard(doc)["metadata"]["generation"])
    finally:
        kube.close()


def _converge(stack: MultigresStack, generation: int, replicas: int) -> None:
    def done() -> bool:
        kube = stack.kube()
        try:
            cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD) or {}
        finally:
            kube.close()
        return (cr.get("status") or {}).get("observedGeneration") == generation and facts.condition_true(cr, "Ready")

    wait_for(done, 900, f"generation {generation} to converge", interval=1)
    stack.wait_serving(SHARD, replicas=replicas, timeout=600)


def _service_app_names(stack: MultigresStack) -> dict[str, str]:
    """uid -> the pod's application name in synchronous_standby_names (<cell>_<service id>)."""
    out = {}
    for pod in stack.pods():
        args = next(c for c in pod["spec"]["containers"] if c["name"] == "multipooler")["args"]
        cell = next(a.split("=", 1)[1] for a in args if a.startswith("--cell="))
        service_id = next(a.split("=", 1)[1] for a in args if a.startswith("--service-id="))
        out[facts.uid(pod)] = f"{cell}_{service_id}"
    return out


def _first_terminating(watched: Watched, uid: str) -> float | None:
    return next((e.at for e in watched.timeline.of(uid) if e.deleting or e.type == "DELETED"), None)


def _assert_out_of_sync_set_when_deleted(watched: Watched, names: dict[str, str], uids: list[str]) -> None:
    for uid in uids:
        moment = _first_terminating(watched, uid)
        assert moment is not None, f"pod {uid} was never deleted"
        sample = watched.sync.at(moment)
        assert sample is not None, "no synchronous_standby_names sample before the deletion"
        assert f'"{names[uid]}"' not in sample.synchronous_standby_names and \
            names[uid] not in sample.synchronous_standby_names.replace('"', " ").split(), (
            f"{names[uid]} was still in the synchronous set when its pod was deleted: {sample}")
        assert "ready-for-deletion" in watched.timeline.drain_states(uid)


def test_rolling_update_one_pod_at_a_time_primary_last_nothing_lost(watched: Watched) -> None:
    stack = watched.stack
    before = {facts.uid(p): p for p in stack.pods()}
    names = _service_app_names(stack)
    primary = stack.primary()
    assert primary is not None
    primary_uid = next(uid for uid, p in before.items() if facts.name(p) == primary.pod)
    acked_before = len(watched.load.acked)

    generation = _apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug"))
    _converge(stack, generation, replicas=3)
    watched.load.wait_for_acks(50, timeout=120)

    deleted = sorted(before, key=lambda uid: _first_terminating(watched, uid) or float("inf"))
    assert all(_first_terminating(watched, uid) is not None for uid in before), "every pod is replaced"
    assert deleted[-1] == primary_uid, "the primary is replaced last"
    # One at a time: a pod is deleted only after the previous replacement was created.
    created = sorted(e.at for e in watched.timeline.events if e.uid not in before and e.type == "ADDED")
    for earlier, later in itertools.pairwise(deleted):
        assert any(_first_terminating(watched, earlier) < c < _first_terminating(watched, later)  # type: ignore[operator]
                   for c in created), "two pods were replaced at once"
    _assert_out_of_sync_set_when_deleted(watched, names, deleted[:-1])
    assert len(watched.load.acked) > acked_before
    assert watched.load.missing() == []
    print(f"rolling update: longest stretch without an acknowledged write "
          f"{watched.load.longest_outage().seconds:.2f}s")


def test_scale_down_deletes_only_pods_out_of_the_synchronous_set_nothing_lost(watched: Watched) -> None:
    stack = watched.stack
    before = {facts.uid(p): facts.name(p) for p in stack.pods()}
    names = _service_app_names(stack)

    generation = _apply(stack, lambda spec: spec["pools"]["default"].update(replicasPerCell=2))
    _converge(stack, generation, replicas=2)
    watched.load.wait_for_acks(50, timeout=120)

    gone = [uid for uid in before if uid not in {facts.uid(p) for p in stack.pods()}]
    assert len(gone) == 1
    _assert_out_of_sync_set_when_deleted(watched, names, gone)
    assert watched.load.missing() == []

    plane = V0_1(dial_host=stack.dial_host)
    try:
        topo = ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))

        def no_record_left() -> bool:
            hosts = {p.hostname.split(".")[0] for p in plane.list_poolers(topo)}
            return before[gone[0]] not in hosts and len(hosts) == 2

        wait_for(no_record_left, 120, "the deleted pod's pooler record to leave etcd", interval=1)
    finally:
        plane.close()
