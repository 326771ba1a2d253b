"""The watch caches and the in-process decision: a shard is handed to the playbook exactly when its
plan has an action or its status would change; a converged shard is decided from memory alone."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import snapshot, tls
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.operator.cache import SHARD, WATCHED, Cache, CacheView
from multigres_pools.operator.decide import decide_shard
from multigres_pools.operator.outcome import Result
from tests.helpers.merge_patch import merge_patch as deep_merge

NS, NAME = "db", "demo"
NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
KINDS = {(k.api_version, k.kind): k for k in WATCHED if not k.metadata_only}
SECRETS = next(k for k in WATCHED if k.metadata_only)


class Unreachable:
    """The API client of a unit test: any read the caches should have answered fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the decision reached the API server ({name})")


def shard(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, generation: int = 1) -> dict:
    doc = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
           "metadata": {"name": NAME, "namespace": NS, "uid": "u-1", "generation": generation,
                        "resourceVersion": "1", "finalizers": [keys.FINALIZER_SHARD]},
           "spec": spec or {"clusterName": NAME, "globalTopoServer": {"address": "topo:2379"},
                            "pools": {"main": {"cells": ["z1"], "replicasPerCell": 2}}}}
    if status is not None:
        doc["status"] = status
    return doc


def as_live(body: dict[str, Any], rv: int) -> dict[str, Any]:
    """What the API server would hold after applying `body`, with the kubelet and binder done."""
    obj = copy.deepcopy(body)
    obj["metadata"].update(uid=f"uid-{obj['metadata']['name']}", resourceVersion=str(rv))
    if obj["kind"] == "Pod":
        obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    elif obj["kind"] == "PersistentVolumeClaim":
        obj["status"] = {"phase": "Bound", "capacity": obj["spec"]["resources"]["requests"]}
    elif obj["kind"] == "Deployment":
        obj["status"] = {"readyReplicas": obj["spec"].get("replicas", 1)}
    return obj


def generated_secrets(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The metadata of the Secrets a generate action creates (the cache holds Secret metadata only)."""
    def meta(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": name, "namespace": NS, "labels": dict(gen.labels), "annotations": annotations or {},
            "ownerReferences": list(body.get("ownerReferences") or [])}}  # as the applier writes them
    if "tls" in body:
        gen = body["tls"]
        made = tls.renew(tls.Step(body["step"]), None, gen.common_name, gen.dns_names, NOW)  # the apply step's dates
        ca_notes = {k: v for k, v in made.ca_annotations.items() if v is not None}
        return [meta(gen.ca_secret, ca_notes),
                meta(gen.tls_secret, {keys.ANN_TLS_FINGERPRINT: gen.fingerprint, **made.leaf_annotations})]
    gen = body["password"]
    return [meta(gen.secret)]


def everything(cache: Cache) -> str:
    return json.dumps([cache.objects(k, None) for k in WATCHED] + [cache.shards()], sort_keys=True)


def view(cache: Cache) -> CacheView:
    return CacheView(cache, live=Unreachable)  # type: ignore[arg-type]


def converge(cache: Cache, tmp_path: Path, rounds: int = 5) -> None:
    """Apply what each verdict planned to the cache, as the playbook and the cluster would."""
    rv = 100
    for _ in range(rounds):
        verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
        assert verdict is not None
        if not verdict.run and verdict.status is None:
            return
        from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, decide
        decision = decide(view(cache), Request(namespace=NS, name=NAME), cache.shard((NS, NAME)), NOW)
        for action in decision.plan.actions if decision.plan else []:
            rv += 1
            if action.verb == "apply":
                cache.apply(KINDS[(action.api_version, action.kind)], "ADDED", as_live(action.body, rv), None)
            elif action.verb in ("generate-tls", "generate-password"):
                for secret in generated_secrets(action.body):
                    cache.apply(SECRETS, "ADDED", as_live(secret, rv), None)
        if decision.status is not None:
            cr = cache.shard((NS, NAME))
            cache.apply(SHARD, "MODIFIED", {**cr, "status": decision.status}, cr)
    raise AssertionError("no convergence")


def test_a_new_shard_needs_a_run_with_a_snapshot_the_module_can_replay(tmp_path: Path) -> None:
    cache = Cache()
    cache.apply(SHARD, "ADDED", shard(), None)
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
    assert verdict is not None and verdict.run and verdict.reason == "actions"
    assert any(line.startswith("apply Pod ") for line in verdict.plan)
    assert verdict.snapshot is not None
    lists = snapshot.load(verdict.snapshot)
    assert lists is not None and lists  # every list the decision made, each answered
    replay = snapshot.Replay(Unreachable(), lists)  # type: ignore[arg-type]
    for key in lists:
        api_version, kind, namespace, selector, metadata_only = json.loads(key)
        answer = replay.list(api_version, kind, namespace, selector, metadata_only=metadata_only)
        # The shards that could hold its topology or repository (state/claims.py): itself; nothing else yet.
        assert [facts.name(o) for o in answer] == ([NAME] if kind == keys.SHARD_KIND else []), key


def test_a_converged_shard_is_decided_from_memory_with_no_run(tmp_path: Path) -> None:
    cache = Cache()
    cache.apply(SHARD, "ADDED", shard(), None)
    converge(cache, tmp_path)
    before = everything(cache)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    verdict = decide_shard(view(cache), (NS, NAME), quiet, now=NOW + dt.timedelta(minutes=5))
    assert verdict is not None and not verdict.run and verdict.reason == "no-op"
    assert verdict.outcome is not None and verdict.outcome.result is Result.CONVERGED
    assert everything(cache) == before  # the decision modified no cached object
    assert not list(quiet.iterdir())  # no snapshot written for a no-op

    # A status to refresh without any action (the generation moved, the spec did not change in
    # effect) is written by the operator itself: no run, no snapshot, the decision to carry out.
    cr = cache.shard((NS, NAME))
    bumped = deep_merge(cr, {"metadata": {"generation": 2}})
    cache.apply(SHARD, "MODIFIED", bumped, cr)
    verdict = decide_shard(view(cache), (NS, NAME), quiet, now=NOW)
    assert verdict is not None and not verdict.run and verdict.reason == "status" and verdict.snapshot is None
    assert verdict.status is not None and verdict.status.status is not None
    assert verdict.status.status["observedGeneration"] == 2
    assert verdict.status.plan is not None and not verdict.status.plan.actions
    assert not list(quiet.iterdir())

    # A periodic full check runs the playbook even for a no-op, without a snapshot (it lists live).
    converge(cache, tmp_path)
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, full_check=True, now=NOW)
    assert verdict is not None and verdict.run and verdict.reason == "full check" and verdict.snapshot is None


def test_an_invalid_spec_runs_once_to_write_its_status_then_waits(tmp_path: Path) -> None:
    cache = Cache()
    bad = shard(spec={"clusterName": NAME, "pools": {"main": {"cells": ["z1"], "replicasPerCell": 0}}})
    cache.apply(SHARD, "ADDED", bad, None)
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
    # A refused spec runs: the playbook's failure is how the refusal is reported.
    assert verdict is not None and verdict.run and verdict.reason == "invalid" and verdict.status is None
    from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, decide
    decision = decide(view(cache), Request(namespace=NS, name=NAME), bad, NOW)
    assert decision.invalid and decision.status is not None
    cache.apply(SHARD, "MODIFIED", {**bad, "status": decision.status}, bad)
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
    assert verdict is not None and not verdict.run and verdict.outcome is not None
    assert verdict.outcome.result is Result.INVALID and verdict.outcome.status_written


def test_views_answer_only_what_the_caches_hold_exactly() -> None:
    cache = Cache()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS, "labels": {
        keys.LABEL_CLUSTER: "a", keys.LABEL_SHARD: "0-inf", keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}}}
    other = deep_merge(pod, {"metadata": {"name": "q", "labels": {keys.LABEL_CLUSTER: "b"}}})
    kind = KINDS[("v1", "Pod")]
    cache.apply(kind, "ADDED", pod, None)
    cache.apply(kind, "ADDED", other, None)
    calls: list[tuple] = []

    class Live:
        def list(self, *args: Any, **kw: Any) -> list:
            calls.append(args)
            return []

    v = CacheView(cache, live=Live)  # type: ignore[arg-type, return-value]
    found = v.list("v1", "Pod", NS, f"{keys.LABEL_CLUSTER}=a,{keys.LABEL_SHARD}=0-inf")
    assert [p["metadata"]["name"] for p in found] == ["p"]
    assert v.list("v1", "Pod", "elsewhere", f"{keys.LABEL_SHARD}=0-inf") == []
    # A label change moves the object between index buckets.
    moved = deep_merge(pod, {"metadata": {"labels": {keys.LABEL_CLUSTER: "b"}}})
    cache.apply(kind, "MODIFIED", moved, pod)
    names = {p["metadata"]["name"] for p in v.list("v1", "Pod", NS, f"{keys.LABEL_CLUSTER}=b,{keys.LABEL_SHARD}")}
    assert names == {"p", "q"}
    cache.apply(kind, "DELETED", moved, moved)
    assert [p["metadata"]["name"] for p in v.list("v1", "Pod", NS, keys.LABEL_SHARD)] == ["q"]
    assert calls == [] and v.misses == 0
    # What the caches cannot answer exactly goes to the API server: a selector without the shard
    # label (the watch only holds labelled objects), a set-based selector, an unwatched kind.
    v.list("v1", "Pod", NS, f"{keys.LABEL_CLUSTER}=a")
    v.list("v1", "Pod", NS, f"{keys.LABEL_SHARD} in (0-inf)")
    v.list("cert-manager.io/v1", "Certificate", NS, keys.LABEL_SHARD)
    assert len(calls) == 3 and v.misses == 3


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=1,b", {"a": "1", "b": ""}, True),
    ("a=1,b", {"a": "1"}, False),
    ("a!=1", {}, True),
    ("a!=1", {"a": "1"}, False),
    ("a==2", {"a": "2"}, True),
    ("", {"x": "y"}, True),
])
def test_selector_matching(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert snapshot.matches(labels, snapshot.parse_selector(selector)) is expected


def test_old_or_foreign_snapshots_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    recorder = snapshot.Recorder(Unreachable())  # type: ignore[arg-type]
    recorder.lists[snapshot.request_key("v1", "Pod", NS, "x", False)] = []
    recorder.write(path)
    assert snapshot.load(path) == recorder.lists
    assert snapshot.load(path, now=recorder.document()["taken"] + snapshot.MAX_AGE + 5) is None
    path.write_text('{"format": 99, "lists": {}}')
    assert snapshot.load(path) is None
    assert snapshot.load(tmp_path / "missing.json") is None


class _Watching:
    """Stands for a synced informer of `kind` (CacheView asks the cache only for kinds it watches)."""

    def __init__(self, kind: Any) -> None:
        import asyncio

        self.kind, self.synced = kind, asyncio.Event()
        self.synced.set()


def test_a_cordoned_node_is_read_from_the_cache_and_moves_its_pods_through_a_drain(tmp_path: Path) -> None:
    """Node maintenance decided from memory: the Node cache (status stripped) says which node is cordoned."""
    from multigres_pools.operator.cache import NODE
    from multigres_pools.watch import strip

    cache = Cache()
    cache.informers = [_Watching(NODE)]  # type: ignore[list-item]
    cache.apply(SHARD, "ADDED", shard(), None)
    converge(cache, tmp_path)
    kind = KINDS[("v1", "Pod")]
    pods = sorted(cache.objects(kind, NS), key=lambda p: p["metadata"]["name"])
    pool = [p for p in pods if p["metadata"]["labels"].get(keys.LABEL_APP_COMPONENT) == keys.COMPONENT_POOL]
    for pod in pods:
        cache.apply(kind, "MODIFIED", deep_merge(pod, {"spec": {"nodeName": "n1"}}), pod)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "9"},
            "spec": {"unschedulable": False}, "status": {"images": [{"names": ["big"]}] * 50}}
    cache.apply(NODE, "ADDED", strip(copy.deepcopy(node), NODE), None)
    assert "status" not in cache.node("n1")  # type: ignore[operator]
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
    assert verdict is not None and not verdict.run  # schedulable: nothing to do

    cordoned = strip(deep_merge(node, {"spec": {"unschedulable": True}}), NODE)
    cache.apply(NODE, "MODIFIED", cordoned, cache.node("n1"))
    verdict = decide_shard(view(cache), (NS, NAME), tmp_path, now=NOW)
    assert verdict is not None and verdict.run
    drains = [line for line in verdict.plan if line.startswith("patch Pod ") and "node-maintenance" in line]
    # No pod is labelled PRIMARY here, so the first replica by index goes first.
    assert len(drains) == 1 and f"drain pod {pool[0]['metadata']['name']}: node-maintenance" in drains[0], verdict.plan
    assert cache.pods_on("n1") and cache.pods_on("elsewhere") == []


def test_a_cordon_or_uncordon_reconciles_the_shards_with_pods_on_that_node(tmp_path: Path) -> None:
    import asyncio

    from multigres_pools.operator.cache import NODE, POD
    from multigres_pools.operator.controller import Controller, Settings
    from multigres_pools.operator.runner import PlaybookRunner

    async def scenario() -> list[tuple[str, str]]:
        ctl = Controller(PlaybookRunner(root=tmp_path, playbook=tmp_path / "unused.yml"),
                         Settings(concurrency=1, coalesce=0.01, resync_period=3600))
        ctl.shard_event(None, shard())
        added: list[tuple[str, str]] = []
        ctl.queue.add = lambda key, **_: added.append(key)  # type: ignore[method-assign]
        pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1"}, "metadata": {
            "name": "p0", "namespace": NS, "labels": {keys.LABEL_SHARD: "0-inf"},
            "ownerReferences": [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": NAME,
                                 "uid": "u-1", "controller": True}]}}
        ctl.cache.apply(POD, "ADDED", pod, None)
        node = {"metadata": {"name": "n1"}, "spec": {}}
        ctl.on_event(NODE, "ADDED", node, None)  # schedulable: nothing to do
        ctl.on_event(NODE, "MODIFIED", {**node, "metadata": {"name": "n1", "labels": {"x": "y"}}}, node)
        assert added == []
        ctl.on_event(NODE, "MODIFIED", {**node, "spec": {"unschedulable": True}}, node)
        ctl.on_event(NODE, "MODIFIED", node, {**node, "spec": {"unschedulable": True}})
        other = {"metadata": {"name": "n2"}, "spec": {}}
        ctl.on_event(NODE, "MODIFIED", {**other, "spec": {"unschedulable": True}}, other)  # no pod of ours there
        return added

    assert asyncio.run(scenario()) == [(NS, NAME), (NS, NAME)]
