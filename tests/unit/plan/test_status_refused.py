"""A refused spec is reported for the refused generation (kstatus: Stalled; GitOps: Degraded/Failed)."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, live_pvc, observed, plan, shard_cr

STAMP, LATER = "2026-05-01T12:00:00Z", "2026-05-01T12:05:00Z"


def _conditions(st: dict) -> dict:
    return {c["type"]: c for c in st["conditions"]}


def _assert_refused(st: dict, generation: int, reason_text: str) -> None:
    cond = _conditions(st)
    assert st["observedGeneration"] == generation and st["phase"] == "Degraded"
    assert reason_text in st["message"]
    assert cond["Ready"]["status"] == "False" and cond["Ready"]["reason"] == status.INVALID_SPEC
    assert cond["Reconciling"]["status"] == "False"
    assert cond["Stalled"]["status"] == "True" and reason_text in cond["Stalled"]["message"]
    assert cond["ConfigurationValid"]["status"] == "False"
    for name in ("Ready", "Reconciling", "Stalled", "ConfigurationValid"):
        assert cond[name]["observedGeneration"] == generation


def test_storage_below_a_grown_pvc_is_refused_for_the_new_generation():
    dp = desired_pool(size="1Gi")
    pods, _ = healthy(dp)
    pvcs = [live_pvc(dp, i, size="2Gi") for i in range(3)]  # grown out of band
    healthy_status = status.compute(desired(dp), observed(*healthy(dp), cr=shard_cr()),
                                    plan(desired(dp), observed(*healthy(dp), cr=shard_cr()), NOW), stamp=STAMP)
    assert healthy_status["phase"] == "Healthy"
    obs = observed(pods, pvcs, cr=shard_cr(status=healthy_status))
    refused_plan = plan(desired(dp), obs, NOW)
    assert refused_plan.errors and not refused_plan.actions
    st = status.compute(desired(dp), obs, refused_plan, stamp=LATER)
    _assert_refused(st, 3, "is smaller than PVC")
    assert st["readyReplicas"] == 3  # the pods keep running the accepted spec
    assert _conditions(st)["Ready"]["lastTransitionTime"] == LATER
    assert status.changed(healthy_status, st)


def test_a_spec_that_cannot_be_rendered_keeps_the_pod_fields_and_reports_the_refusal():
    previous = {"observedGeneration": 2, "phase": "Healthy", "readyReplicas": 3, "podRoles": {"p-0": "PRIMARY"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "Healthy", "message": "3/3 pods ready",
                                "lastTransitionTime": STAMP, "observedGeneration": 2},
                               {"type": "Available", "status": "True", "reason": "AllPodsReady",
                                "lastTransitionTime": STAMP}]}
    st = status.refused(previous, ["spec.pools: required"], 4, LATER)
    _assert_refused(st, 4, "spec.pools: required")
    assert st["readyReplicas"] == 3 and st["podRoles"] == {"p-0": "PRIMARY"}
    assert _conditions(st)["Available"] == previous["conditions"][1]  # untouched
    again = status.refused(st, ["spec.pools: required"], 4, "2026-05-01T13:00:00Z")
    assert not status.changed(st, again)  # no write when nothing changed
    assert status.refused({}, ["x"], None, STAMP).get("observedGeneration") is None  # vars mode: no CR


def test_a_long_refusal_fits_the_condition_message_limit():
    st = status.refused({}, ["e" * 40000], 1, STAMP)
    assert len(_conditions(st)["Stalled"]["message"]) == 32768
