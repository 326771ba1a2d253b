"""Render decides, plan compares (docs/architecture.md): ownership, our finalizer and the index label
come from the renderer, and the planner tests' `rendered` helper adds exactly what the renderer adds
for a MultigresShard. Data PVCs are the one exception: their reference follows whenDeleted in the planner."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from tests import render_corpus as corpus
from tests.unit.plan.plan_factories import CR_UID, NOW, observed, plan, rendered, shard_cr

OWNER = {"name": "demo", "uid": CR_UID}


@pytest.mark.parametrize("when_deleted", ["Retain", "Delete"])
def test_the_rendered_helper_matches_the_renderer(when_deleted: str) -> None:
    spec = model.load_spec(corpus.spec({"pvcDeletionPolicy": {"whenDeleted": when_deleted}}))
    unowned = rendered(render.desired_state(spec, "db"), shard_cr())
    owned = render.desired_state(spec, "db", owner=OWNER)
    for helper, engine in zip(unowned.pools, owned.pools, strict=True):
        for index in (0, 3):
            assert helper.pod(index)["metadata"] == engine.pod(index)["metadata"]
            assert helper.pvc(index)["metadata"] == engine.pvc(index)["metadata"]
    # A shared PVC's reference is what the hand-built object says (the helper cannot know whenDeleted).
    shared = [(a["metadata"], b["metadata"]) for a, b in zip(unowned.objects, owned.objects, strict=True)
              if a["kind"] != "PersistentVolumeClaim" or when_deleted == "Retain"]
    assert shared and all(a == b for a, b in shared)


def test_the_renderer_sets_finalizer_index_label_and_reference_on_every_pod() -> None:
    pool = render.desired_state(model.load_spec(corpus.spec({})), "db", owner=OWNER).pools[0]
    md = pool.pod(4)["metadata"]
    assert md["finalizers"] == [keys.FINALIZER_POD] and md["labels"][keys.LABEL_INDEX] == "4"
    assert [(r["uid"], r["controller"], r["blockOwnerDeletion"]) for r in md["ownerReferences"]] == [
        (CR_UID, True, True)]


@pytest.mark.parametrize("when_deleted", ["Retain", "Delete"])
def test_the_planner_creates_the_rendered_pods_and_claims_the_pvcs(when_deleted: str) -> None:
    desired = render.desired_state(model.load_spec(corpus.spec({"pvcDeletionPolicy": {"whenDeleted": when_deleted}})),
                                   "db", owner=OWNER)
    result = plan(desired, observed(cr=shard_cr()), NOW)
    pool = desired.pools[0]
    created = {(a.kind, a.name): a.body or {} for a in result.actions if a.verb == "apply"}
    for index in range(pool.replicas):
        pod, pvc = pool.pod(index), pool.pvc(index)
        assert created[("Pod", pod["metadata"]["name"])] == pod
        claimed = created[("PersistentVolumeClaim", pvc["metadata"]["name"])]
        assert claimed["metadata"]["annotations"] == {keys.ANN_OWNER_SHARD: "demo"}
        refs = [r["uid"] for r in claimed["metadata"].get("ownerReferences", [])]
        assert refs == ([CR_UID] if when_deleted == "Delete" else [])
