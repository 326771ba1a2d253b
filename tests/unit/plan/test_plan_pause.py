"""Pause: the annotation withholds every write, status still says what would have been done."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, observed, plan, shard_cr

STAMP = "2026-05-01T12:00:00Z"


def _paused_cr(value: str = "true", **kw):  # type: ignore[no-untyped-def]
    return shard_cr(annotations={keys.ANN_PAUSED: value}, **kw)


def _conditions(st: dict) -> dict:
    return {c["type"]: c for c in st["conditions"]}


def test_paused_scale_up_sends_nothing_and_status_lists_the_withheld_lines():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 2)
    obs = observed(pods, pvcs, cr=_paused_cr())
    result = plan(desired(dp), obs, NOW)
    assert result.actions == [] and result.requeue_after == 0
    assert [a.kind for a in result.withheld] == ["PersistentVolumeClaim", "Pod"]
    assert "withheld: apply Pod" in " | ".join(result.lines())
    st = status.compute(desired(dp), obs, result, stamp=STAMP)
    paused = _conditions(st)["Paused"]
    assert paused["status"] == "True" and paused["reason"] == "Paused"
    assert "2 writes withheld" in paused["message"] and "create pod" in paused["message"]
    assert st["message"] == paused["message"] and st["phase"] == "Progressing"
    events = status.transition_events(obs.cr, {}, st)
    assert [(e.event_type, e.event_reason) for e in events] == [("Normal", "Paused")]


def test_paused_converged_shard_stays_healthy_and_says_nothing_to_do():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=_paused_cr())
    # The shard finalizer is present (shard_cr's default), so nothing at all is planned.
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    assert st["phase"] == "Healthy"
    assert _conditions(st)["Paused"]["message"].endswith("nothing to do")


@pytest.mark.parametrize("value", ["yes", "True", ""])
def test_unknown_value_is_paused_and_named_in_status(value):  # type: ignore[no-untyped-def]
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 2)
    obs = observed(pods, pvcs, cr=_paused_cr(value))
    result = plan(desired(dp), obs, NOW)
    assert result.actions == [] and result.withheld
    paused = _conditions(status.compute(desired(dp), obs, result, stamp=STAMP))["Paused"]
    assert paused["status"] == "True" and paused["reason"] == "InvalidAnnotation"
    assert keys.ANN_PAUSED in paused["message"] and "'true' and 'false'" in paused["message"]
    assert repr(value) in paused["message"]


def test_false_or_absent_acts_and_reports_not_paused():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 2)
    for cr in (_paused_cr("false"), shard_cr()):
        obs = observed(pods, pvcs, cr=cr)
        result = plan(desired(dp), obs, NOW)
        assert result.actions and not result.withheld and result.paused is None
        assert _conditions(status.compute(desired(dp), obs, result, stamp=STAMP))["Paused"]["status"] == "False"


def test_paused_deletion_keeps_the_finalizer_and_deletes_nothing():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=_paused_cr(deleting=True))
    result = plan(desired(dp), obs, NOW)
    assert result.deleting and not result.finished and result.actions == []
    assert {a.verb for a in result.withheld} >= {"delete", "unfinalize"}
    assert "shard deletion waits (finalizer kept)" in result.pause_message


def test_resume_event_when_the_pause_is_lifted():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    paused_obs = observed(pods, pvcs, cr=_paused_cr())
    before = status.compute(desired(dp), paused_obs, plan(desired(dp), paused_obs, NOW), stamp=STAMP)
    obs = observed(pods, pvcs, cr=shard_cr(status=before))
    after = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    assert [e.event_reason for e in status.transition_events(obs.cr, before, after)] == ["Resumed"]
