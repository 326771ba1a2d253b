"""Pruning and drain-annotation hygiene of the engine on the real apiserver (docs/architecture.md,
"Pruning"; docs/operations.md, "Drain annotations")."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import ShardCondition
from ansible_collections.multigres.pools.plugins.module_utils.state import drain_annotations, facts

from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")
SHARD_SEL = labels.selector_string(labels.shard_selector(SID))


def _names(rig, api: str, kind: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {facts.name(o) for o in rig.client.list(api, kind, rig.namespace, SHARD_SEL)}


def _events(rig, reason: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return [e for e in rig.client.list("v1", "Event", rig.namespace, "") if e.get("reason") == reason]


def test_network_policy_turned_off_is_pruned_and_a_user_made_twin_stays(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    (policy,) = _names(rig, "networking.k8s.io/v1", "NetworkPolicy")
    # A user's object with exactly our labels but no ownerReference is not ours to delete.
    twin = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "users-own", "namespace": rig.namespace,
                         "labels": labels.component_labels(SID, keys.COMPONENT_CONFIG)}, "data": {"k": "v"}}
    rig.client.create(twin, field_manager="user")

    rig.update_cr({"security": {"networkPolicy": {"enabled": False}}})
    preview = rig.run(name="demo", check=True, diff=True)
    line = f"prune NetworkPolicy/{policy}: owned by this shard and no longer rendered"
    assert line in preview.plan and line in preview.diff[0]["prepared"]
    assert _names(rig, "networking.k8s.io/v1", "NetworkPolicy") == {policy}  # check mode: a dry run

    result = rig.settle(name="demo")
    assert result.writes == 0
    assert _names(rig, "networking.k8s.io/v1", "NetworkPolicy") == set()
    assert "users-own" in _names(rig, "v1", "ConfigMap")
    pruned = [a for r in rig.results if r is not preview for a in r.actions if a["verb"] == "prune"]
    assert [(a["kind"], a["name"], a["result"]) for a in pruned] == [("NetworkPolicy", policy, "done")]


def test_cell_removed_from_multiorch_prunes_its_deployment_and_service(rig, shard_crd):  # type: ignore[no-untyped-def]
    body = spec(2)
    body["pools"][POOL]["cells"] = [CELL, "z2"]
    rig.create_cr(body)
    rig.settle(name="demo")
    deployment = naming.multiorch_deployment_name(SID, "z2")
    service = naming.multiorch_service_name(SID, "z2")
    assert deployment in _names(rig, "apps/v1", "Deployment") and service in _names(rig, "v1", "Service")

    rig.update_cr({"multiorch": {"cells": [CELL]}})
    rig.settle(name="demo")
    assert _names(rig, "apps/v1", "Deployment") == {naming.multiorch_deployment_name(SID, CELL)}
    assert service not in _names(rig, "v1", "Service")
    assert naming.multiorch_service_name(SID, CELL) in _names(rig, "v1", "Service")
    assert len(rig.pods()) == 4  # the pool pods of both cells are untouched


def test_configmap_keys_the_engine_stopped_rendering_are_dropped_by_server_side_apply(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    name = naming.pg_hba_configmap_name(SID)
    live = rig.client.get("v1", "ConfigMap", rig.namespace, name)
    ours = sorted(live["data"])
    # What an older engine would have left: a key applied by our field manager and recorded as ours...
    # (the engine's whole applied object, so our manager keeps owning its labels and ownerReference).
    meta = {k: live["metadata"][k] for k in ("name", "namespace", "labels", "ownerReferences")}
    meta["annotations"] = {keys.ANN_CONFIG_KEYS: ",".join([*ours, "retired.conf"])}
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {**live["data"], "retired.conf": "x"}}
    rig.client.apply(old, keys.FIELD_MANAGER)
    # ...and a key a user added with their own field manager.
    rig.client.merge_patch("v1", "ConfigMap", rig.namespace, name, {"data": {"users.conf": "y"}},
                           field_manager="user")

    result = rig.settle(name="demo")
    assert result.writes == 0
    after = rig.client.get("v1", "ConfigMap", rig.namespace, name)
    assert sorted(after["data"]) == sorted([*ours, "users.conf"])
    assert facts.annotations(after)[keys.ANN_CONFIG_KEYS] == ",".join(ours)
    reasons = [a["reason"] for r in rig.results for a in r.actions if a["kind"] == "ConfigMap"]
    assert f"update ConfigMap {name}: drop data keys no longer rendered: retired.conf" in reasons


def test_unknown_drain_state_is_reported_and_left_alone_while_scale_down_goes_on(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(3))
    rig.settle(name="demo")
    primary = rig.primary()
    typo = next(n for n in sorted(rig.pods(), reverse=True) if n != primary)
    rig.client.merge_patch("v1", "Pod", rig.namespace, typo,
                           {"metadata": {"annotations": {keys.ANN_DRAIN_STATE: "drainig"}}}, field_manager="user")
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 2}}})
    for _ in range(40):
        rig.run(name="demo")
        rig.world()
        if len(rig.pods()) == 2:
            break
    assert typo in rig.pods() and primary in rig.pods()
    assert facts.annotations(rig.pods()[typo])[keys.ANN_DRAIN_STATE] == "drainig"
    conds = {c["type"]: c for c in rig.cr()["status"]["conditions"]}
    cond = conds[ShardCondition.DRAIN_ANNOTATIONS_VALID]
    assert (cond["status"], cond["reason"]) == ("False", "UnknownDrainState")
    assert cond["message"] == drain_annotations.unknown_state_message(typo, "drainig")
    (event,) = _events(rig, "UnknownDrainState")
    assert event["type"] == "Warning" and typo in event["message"]

    rig.client.merge_patch("v1", "Pod", rig.namespace, typo,
                           {"metadata": {"annotations": {keys.ANN_DRAIN_STATE: None}}}, field_manager="user")
    rig.settle(name="demo")
    cond = {c["type"]: c for c in rig.cr()["status"]["conditions"]}[ShardCondition.DRAIN_ANNOTATIONS_VALID]
    assert (cond["status"], cond["reason"]) == ("True", "Valid")


def test_cancelled_drain_leaves_no_drain_annotation_behind(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(3))
    rig.settle(name="demo")
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 2}}})
    rig.run(name="demo")  # requests the drain; the agent has not moved yet
    (victim,) = rig.drained_pods()
    # What the agent and a human may have added while it waited in `requested`.
    rig.client.merge_patch("v1", "Pod", rig.namespace, victim, {"metadata": {"annotations": {
        keys.ANN_DRAIN_BLOCKED: "no-primary", keys.ANN_DRAIN_STATE_SINCE: "2026-05-01T12:00:00Z",
        keys.ANN_DRAIN_FORCE: "requested"}}}, field_manager="user")
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 3}}})
    result = rig.run(name="demo")
    assert any(a["reason"].startswith(f"cancel drain of pod {victim}") for a in result.actions)
    left = {k for k in facts.annotations(rig.pods()[victim]) if k.startswith("drain.")}
    assert left == set()
