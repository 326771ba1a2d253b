"""Ownership, not labels (state/ownership.py): objects with the shard's labels that are not the shard's are
never counted, patched, deleted or adopted, and the status names them."""

from __future__ import annotations

import copy

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts, ownership
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy
from ansible_collections.multigres.pools.plugins.module_utils.state.observed import Observed
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from tests.unit.plan.plan_factories import (
    CR_UID,
    NOW,
    desired,
    desired_pool,
    events,
    live_pod,
    live_pvc,
    plan,
    shard_cr,
    writes,
)

STAMP = "2026-05-01T12:00:00Z"


def _ref(uid: str = CR_UID, name: str = "demo", kind: str = keys.SHARD_KIND) -> dict:
    """A controller reference as the engine writes it (blockOwnerDeletion: ownership.binding)."""
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": True}


def _ours(obj: dict) -> dict:
    obj["metadata"]["ownerReferences"] = [_ref()]
    return obj


def _mounting(pod: dict, claim: str) -> dict:
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


def _split_observed(cr: dict | None, pods: list, pvcs: list) -> Observed:
    parts = ownership.split(ownership.Owner.of(cr), pods, pvcs, {})
    return Observed(cr=cr, pods=parts.pods, pvcs=parts.pvcs, others=parts.others, foreign=parts.foreign)


def test_split_keeps_controlled_pods_and_claimed_pvcs_and_sets_the_rest_apart() -> None:
    dp = desired_pool(replicas=3)
    pods = [_ours(live_pod(dp, 0)), live_pod(dp, 1)]  # pod 1: copied labels, no owner
    pods.append(live_pod(dp, 2))
    pods[2]["metadata"]["ownerReferences"] = [_ref(uid="other-uid", name="rival")]
    legacy = live_pvc(dp, 0, annotations={keys.ANN_OWNER_SHARD: None})  # older version, mounted by pod 0
    _mounting(pods[0], legacy["metadata"]["name"])
    pvcs = [legacy, live_pvc(dp, 1), live_pvc(dp, 2, annotations={keys.ANN_OWNER_SHARD: None})]
    parts = ownership.split(ownership.Owner.of(shard_cr()), pods, pvcs, {})
    assert [p["metadata"]["name"] for p in parts.pods] == [pods[0]["metadata"]["name"]]
    assert [p["metadata"]["name"] for p in parts.pvcs] == [pvcs[0]["metadata"]["name"], pvcs[1]["metadata"]["name"]]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in parts.foreign) == sorted(
        [("Pod", pods[1]["metadata"]["name"]), ("Pod", pods[2]["metadata"]["name"]),
         ("PersistentVolumeClaim", pvcs[2]["metadata"]["name"])])
    assert ownership.rival_refs(parts.foreign) == {"rival": "other-uid"}
    assert "controlled by MultigresShard rival" in ownership.describe(parts.foreign)


def test_vars_mode_has_no_owner_and_keeps_everything() -> None:
    dp = desired_pool(replicas=1)
    parts = ownership.split(ownership.Owner.of(None), [live_pod(dp, 0)], [live_pvc(dp, 0)], {})
    assert len(parts.pods) == 1 and len(parts.pvcs) == 1 and parts.foreign == ()


def test_foreign_pods_are_not_replicas_and_their_names_are_never_applied() -> None:
    """A forged pod at index 1 neither counts as a replica nor is deleted; the missing replica
    goes to the next free index instead of taking the forged pod's name over."""
    dp = desired_pool(replicas=2)
    cr = shard_cr()
    forged = live_pod(dp, 1)
    obs = _split_observed(cr, [_ours(live_pod(dp, 0)), forged], [live_pvc(dp, 0)])
    result = plan(desired(dp), obs, NOW)
    created = writes(result, "apply", "Pod")
    assert created == [dp.pod(2)["metadata"]["name"]]
    assert forged["metadata"]["name"] not in writes(result)
    st = status.compute(desired(dp), obs, result, stamp=STAMP)
    cond = {c["type"]: c for c in st["conditions"]}[keys.ShardCondition.FOREIGN_OBJECTS]
    assert cond["status"] == "True" and forged["metadata"]["name"] in cond["message"]
    reasons = [e.event_reason for e in status.transition_events(cr, {}, st)]
    assert "ForeignObjects" in reasons
    assert forged["metadata"]["name"] not in st.get("podRoles", {})


def test_a_surplus_of_foreign_pods_starts_no_scale_down_drain() -> None:
    dp = desired_pool(replicas=1)
    ours = _ours(live_pod(dp, 0, role=keys.Role.PRIMARY))
    forged = [live_pod(dp, i, role=keys.Role.REPLICA) for i in (1, 2)]
    result = plan(desired(dp), _split_observed(shard_cr(), [ours, *forged], [live_pvc(dp, 0)]), NOW)
    assert writes(result) == []


def test_shard_deletion_leaves_foreign_pods_and_pvcs_alone() -> None:
    dp = desired_pool(replicas=1, when_deleted=PVCPolicy.DELETE)
    forged_pod, forged_pvc = live_pod(dp, 1), live_pvc(dp, 1, annotations={keys.ANN_OWNER_SHARD: None})
    obs = _split_observed(shard_cr(deleting=True), [_ours(live_pod(dp, 0)), forged_pod],
                          [_ours(live_pvc(dp, 0)), forged_pvc])
    touched = writes(plan(desired(dp), obs, NOW))
    assert forged_pod["metadata"]["name"] not in touched and forged_pvc["metadata"]["name"] not in touched
    assert dp.pod(0)["metadata"]["name"] in touched


def test_a_live_rival_shard_refuses_the_whole_pass() -> None:
    dp = desired_pool(replicas=1)
    rival_pod = live_pod(dp, 0)
    rival_pod["metadata"]["ownerReferences"] = [_ref(uid="other-uid", name="first")]
    parts = ownership.split(ownership.Owner.of(shard_cr()), [rival_pod], [], {})
    obs = Observed(cr=shard_cr(), pods=parts.pods, pvcs=parts.pvcs, foreign=parts.foreign,
                   rivals={"first": "other-uid"})
    result = plan(desired(dp), obs, NOW)
    assert result.actions == [] and "already run by MultigresShard first" in result.errors[0]
    st = status.compute(desired(dp), obs, result, stamp=STAMP)
    cond = {c["type"]: c for c in st["conditions"]}
    assert cond["ConfigurationValid"]["status"] == "False" and cond["Stalled"]["status"] == "True"
    assert st["phase"] == "Degraded"


def test_legacy_pvc_mounted_by_our_pod_is_marked_and_a_retained_one_keeps_its_mark() -> None:
    dp = desired_pool(replicas=1)
    pod = _ours(live_pod(dp, 0))
    legacy = live_pvc(dp, 0, annotations={keys.ANN_OWNER_SHARD: None})
    _mounting(pod, legacy["metadata"]["name"])
    result = plan(desired(dp), _split_observed(shard_cr(), [pod], [legacy]), NOW)
    patch = [a for a in result.actions if a.kind == "PersistentVolumeClaim" and a.verb == "patch"]
    assert patch and patch[0].body["metadata"]["annotations"] == {keys.ANN_OWNER_SHARD: "demo"}
    marked = copy.deepcopy(legacy)
    marked["metadata"]["annotations"] = {keys.ANN_OWNER_SHARD: "demo"}
    again = plan(desired(dp), _split_observed(shard_cr(), [pod], [marked]), NOW)
    assert writes(again, "patch", "PersistentVolumeClaim") == []
    assert "ForeignObjects" not in events(again)


def test_a_foreign_secret_under_a_generated_name_refuses_the_pass() -> None:
    from dataclasses import replace

    from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
    from ansible_collections.multigres.pools.plugins.module_utils.spec import model

    spec = {"clusterName": "demo", "globalTopoServer": {"address": "topo:2379"},
            "pools": {"main": {"cells": ["z1"], "replicasPerCell": 2}}}
    gen = render.desired_state(model.load_spec(spec), "db").generated_password
    assert gen is not None
    want = replace(desired(desired_pool(replicas=1)), generated_password=gen)
    planted = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": gen.secret, "uid": "s-1"}}
    parts = ownership.split(ownership.Owner.of(shard_cr()), [], [], {"Secret": [planted]})
    obs = Observed(cr=shard_cr(), others=parts.others, foreign=parts.foreign)
    result = plan(want, obs, NOW)
    assert result.actions == []
    assert result.errors[0].startswith(f"spec.postgresPasswordSecretRef: the engine generates Secret {gen.secret}")
    # Left by a deleted MultigresShard of the same name: the pass waits for the garbage collector.
    planted["metadata"]["ownerReferences"] = [_ref(uid="deleted-uid")]
    parts = ownership.split(ownership.Owner.of(shard_cr()), [], [], {"Secret": [planted]})
    waiting = plan(want, Observed(cr=shard_cr(), others=parts.others, foreign=parts.foreign), NOW)
    assert waiting.actions == [] and not waiting.errors and "garbage-collected" in waiting.waiting[0]
    # Ours (generated with the controller reference): planned around as before, no refusal.
    _ours(planted)
    parts = ownership.split(ownership.Owner.of(shard_cr()), [], [], {"Secret": [planted]})
    assert not plan(want, Observed(cr=shard_cr(), others=parts.others, foreign=parts.foreign), NOW).errors


def test_a_foreign_pvc_under_the_backup_pvc_name_refuses_the_pass() -> None:
    from ansible_collections.multigres.pools.plugins.module_utils.core import labels, naming

    from tests.unit.plan.plan_factories import SID

    backup = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
              "metadata": {"name": naming.backup_pvc_name(SID, "z1"), "namespace": "db",
                           "labels": labels.component_labels(SID, keys.COMPONENT_BACKUP)},
              "spec": {"resources": {"requests": {"storage": "10Gi"}}}}
    dp = desired_pool(replicas=1)
    pod = _ours(live_pod(dp, 0))
    legacy = {**backup, "metadata": {**backup["metadata"], "uid": "b"}}  # retained by an older version, unmounted
    result = plan(desired(dp, objects=(backup,)), _split_observed(shard_cr(), [pod], [legacy]), NOW)
    assert result.actions == []
    assert f"PersistentVolumeClaim {backup['metadata']['name']} exists but is not this MultigresShard's" in \
        result.errors[0] and keys.ANN_OWNER_SHARD in result.errors[0]
    # Mounted by one of the shard's pods: the shard's (upgrade), marked by the pass.
    _mounting(pod, backup["metadata"]["name"])
    again = plan(desired(dp, objects=(backup,)), _split_observed(shard_cr(), [pod], [legacy]), NOW)
    assert not again.errors


def test_a_copied_controller_reference_without_block_owner_deletion_is_not_ownership() -> None:
    """Anyone who may create pods can copy the reference; only one allowed to set the shard's
    finalizers can add blockOwnerDeletion (OwnerReferencesPermissionEnforcement), so only that counts."""
    dp = desired_pool(replicas=2)
    copied = live_pod(dp, 1)
    copied["metadata"]["ownerReferences"] = [{**_ref(), "blockOwnerDeletion": False}]
    bare = live_pvc(dp, 1)
    bare["metadata"]["ownerReferences"] = [{k: v for k, v in _ref().items() if k != "blockOwnerDeletion"}]
    parts = ownership.split(ownership.Owner.of(shard_cr()), [_ours(live_pod(dp, 0)), copied], [bare], {})
    assert [facts.name(o) for o in parts.foreign] == [facts.name(copied), facts.name(bare)]
    assert [facts.name(p) for p in parts.pods] == [dp.pod(0)["metadata"]["name"]] and parts.pvcs == ()
    owner = ownership.Owner.of(shard_cr())
    assert owner is not None and not owner.controls(copied) and owner.controls(_ours(live_pod(dp, 0)))
