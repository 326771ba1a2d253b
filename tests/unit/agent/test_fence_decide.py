"""The agent's fence decision (agent/fence.py `decide`): pure, every refusal changes nothing."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent import fence
from multigres_pools.agent.fence import Facts, Step
from multigres_pools.dataplane.base import Eligibility

R = keys.FenceReason
ELIGIBLE, INELIGIBLE = Eligibility.ELIGIBLE, Eligibility.INELIGIBLE


@pytest.mark.parametrize(("facts", "step", "fenced", "reason"), [
    (Facts(listed=False, applied=False), Step.NONE, False, R.UNFENCED),
    (Facts(listed=False, applied=True, eligibility=INELIGIBLE), Step.UNFENCE, False, R.UNFENCED),
    (Facts(listed=True, applied=False, supported=False), Step.REPORT, False, R.UNSUPPORTED),
    (Facts(listed=True, applied=True, is_primary=True), Step.REPORT, False, R.PRIMARY),
    (Facts(listed=True, applied=False, eligibility=ELIGIBLE, in_sync_set=True, durable_without=False),
     Step.REPORT, False, R.DURABILITY),
    (Facts(listed=True, applied=False, eligibility=ELIGIBLE, in_sync_set=True), Step.FENCE, False, R.PENDING),
    # Not in the set (e.g. a restarted pooler not re-added yet): no durability question, fence it.
    (Facts(listed=True, applied=True, eligibility=Eligibility.UNKNOWN, in_sync_set=False, durable_without=False),
     Step.FENCE, False, R.PENDING),
    (Facts(listed=True, applied=True, eligibility=INELIGIBLE, in_sync_set=True), Step.REPORT, False, R.PENDING),
    (Facts(listed=True, applied=True, eligibility=INELIGIBLE, in_sync_set=False), Step.REPORT, True, R.FENCED),
    (Facts(listed=True, applied=False, detail="its pooler did not answer"), Step.REPORT, False, R.PENDING),
    (Facts(listed=True, applied=False, eligibility=ELIGIBLE, detail="no confirmed primary"),
     Step.REPORT, False, R.PENDING),
])
def test_decide(facts: Facts, step: Step, fenced: bool, reason: keys.FenceReason) -> None:
    d = fence.decide(facts)
    assert (d.step, d.fenced, d.reason) == (step, fenced, reason), d.message


def test_refusals_say_why_and_that_nothing_changed() -> None:
    primary = fence.decide(Facts(listed=True, applied=False, is_primary=True))
    assert "primary" in primary.message and "nothing changed" in primary.message
    durability = fence.decide(Facts(listed=True, applied=False, eligibility=ELIGIBLE, in_sync_set=True,
                                    durable_without=False, detail="synchronous set 2 with the primary, policy "
                                    "at least 2"))
    assert "durability policy" in durability.message and "policy at least 2" in durability.message


def test_listed_pods_and_what_concerns_the_agent() -> None:
    shard = {"spec": {"pools": {"a": {"fenced": ["p-1"]}, "b": {}, "c": None}}}
    assert fence.listed_pods(shard) == {"p-1"}
    assert fence.listed_pods(None) == set()
    pod = {"metadata": {"name": "p-2", "annotations": {}}}
    assert not fence.concerns(pod, {"p-1"})
    assert fence.concerns({"metadata": {"name": "p-2", "annotations": {keys.ANN_FENCED: "true"}}}, set())
    refused = {"metadata": {"name": "p-2"}, "status": {"conditions": [
        {"type": keys.POD_CONDITION_FENCED, "status": "False", "reason": "IsPrimary"}]}}
    assert fence.concerns(refused, set())  # reported as Unfenced once it is no longer listed
