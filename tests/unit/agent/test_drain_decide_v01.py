"""The v0.1.0 drain (by cohort eligibility): INELIGIBLE before REMOVE, proofs from both sides, taken
again around the unregister, and a drain that goes back a step instead of deleting a returned standby."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState
from hypothesis import given
from hypothesis import strategies as st

from multigres_pools.agent.drain import Blocked, Decision, Effect, Facts, Guard, Need, decide

R, D, A, F = DrainState.REQUESTED, DrainState.DRAINING, DrainState.ACKNOWLEDGED, DrainState.READY_FOR_DELETION


def walk(state: DrainState, answers: dict, facts: Facts | None = None, steps: int = 40) -> list[str]:
    """Play the executor: answers["listed"]/["out"] may be lists consumed one read at a time."""
    f = facts or Facts(by_eligibility=True)
    trace: list[str] = []

    def answer(key: str):
        value = answers[key]
        return value.pop(0) if isinstance(value, list) else value

    for _ in range(steps):
        d: Decision = decide(state, f)
        trace.append(f"{d.kind}:{d.need or d.effect or d.state or d.reason}")
        if d.kind == "need":
            if d.need is Need.PRIMARY_GUARD:
                f.guard = answers.get("guard", Guard.OK)
            elif d.need is Need.SYNC:
                f.listed, f.durable = answer("listed"), answers.get("durable", True)
            else:
                f.standby_out = answer("out")
        elif d.kind == "effect":
            if d.effect is Effect.MAKE_INELIGIBLE:
                f.ineligible_done = True
            elif d.effect is Effect.REMOVE_STANDBY:
                f.removal_done = True
            else:
                f.unregistered = True
            f.forget_proofs()  # what the executor does after every v0.1.0 side effect
        elif d.kind == "write":
            if d.state is D and state is A:
                f = Facts(by_eligibility=True)
            state = d.state
        else:
            return trace
    raise AssertionError(trace)


def test_happy_path_makes_it_ineligible_before_removing_and_proves_again_after_unregister() -> None:
    trace = walk(R, {"listed": [True, True, False, False], "out": True})
    assert trace == [
        "need:primary-guard", "need:sync-replication", "write:draining",
        "effect:make-ineligible", "need:sync-replication", "effect:remove-standby",
        "need:sync-replication", "need:standby-state", "write:acknowledged",
        "effect:unregister", "need:sync-replication", "need:standby-state", "write:ready-for-deletion", "done:"]


def test_a_fresh_pass_in_acknowledged_proves_before_and_after_unregister() -> None:
    trace = walk(A, {"listed": [False, False], "out": True})
    assert trace == ["need:sync-replication", "need:standby-state", "effect:unregister",
                     "need:sync-replication", "need:standby-state", "write:ready-for-deletion", "done:"]


def test_no_stop_when_the_cohort_cannot_do_without_it() -> None:
    for state in (R, D):
        trace = walk(state, {"listed": True, "durable": False, "out": False})
        assert trace[-1] == f"block:{Blocked.NOT_DURABLE_WITHOUT}"
        assert not any(t.startswith(("effect", "write")) for t in trace)


def test_still_listed_or_eligible_again_blocks_draining() -> None:
    assert walk(D, {"listed": [True, True, True], "out": True})[-1] == f"block:{Blocked.STILL_LISTED}"
    assert walk(D, {"listed": [True, True, False], "out": False})[-1] == f"block:{Blocked.ELIGIBLE_AGAIN}"


def test_a_standby_back_after_unregister_sends_the_drain_back_never_forward() -> None:
    # acknowledged: proof holds, unregister, then the standby is found ELIGIBLE (it restarted).
    trace = walk(A, {"listed": [False, False, True, True, False, False, False, False],
                     "out": [True, False, True, True, True, True]})
    assert trace.index("write:draining") < trace.index("write:ready-for-deletion")
    first = trace.index("write:draining")
    assert "write:ready-for-deletion" not in trace[:first]
    assert trace[first + 1:first + 4] == ["need:primary-guard", "need:sync-replication", "effect:make-ineligible"]


def test_acknowledged_never_unregisters_without_the_proof() -> None:
    d = decide(A, Facts(by_eligibility=True, sync_error="primary-unreachable"))
    assert (d.kind, d.reason) == ("block", "primary-unreachable")
    d = decide(A, Facts(by_eligibility=True, listed=True, standby_out=True))
    assert (d.kind, d.state, d.reason) == ("write", D, Blocked.STILL_LISTED)


def test_ready_for_deletion_goes_back_when_the_standby_is_found_back() -> None:
    """Until the engine deletes the pod: a container restart makes the standby ELIGIBLE again."""
    assert walk(F, {"listed": False, "out": True}) == ["need:sync-replication", "need:standby-state", "done:"]
    for listed, out, reason in ((True, True, Blocked.STILL_LISTED), (False, False, Blocked.ELIGIBLE_AGAIN)):
        d = decide(F, Facts(by_eligibility=True, listed=listed, standby_out=out))
        assert (d.kind, d.state, d.reason) == ("write", D, reason)
    # Cannot tell (the primary does not answer), a primary's drain, era A: a finished drain stays finished.
    assert decide(F, Facts(by_eligibility=True, sync_error="primary-unreachable")).kind == "done"
    assert decide(F, Facts(by_eligibility=True, is_primary=True)).kind == "done"
    assert decide(F, Facts(force=F)).kind == "done"


def test_primary_keeps_the_failover_rule() -> None:
    d = decide(R, Facts(by_eligibility=True, is_primary=True))
    assert (d.kind, d.need) == ("need", Need.SYNC)
    d = decide(R, Facts(by_eligibility=True, is_primary=True, failover_target=False))
    assert d.reason == Blocked.NO_FAILOVER_TARGET


facts_strategy = st.builds(
    Facts, by_eligibility=st.just(True), is_primary=st.just(False), force=st.none(),
    guard=st.sampled_from([None, *Guard]), durable=st.sampled_from([None, True, False]),
    ineligible_done=st.booleans(), ineligible_error=st.sampled_from([None, "pooler-not-a-replica"]),
    removal_error=st.sampled_from([None, "cohort-below-durability-policy"]), removal_done=st.booleans(),
    listed=st.sampled_from([None, True, False]), standby_out=st.sampled_from([None, True, False]),
    sync_error=st.sampled_from([None, "primary-unreachable"]), unregister_error=st.none(),
    unregistered=st.booleans(),
)


@given(st.sampled_from([R, D, A, F]), facts_strategy)
def test_fail_closed(state: DrainState, f: Facts) -> None:
    """Forward only with the proof; the one way back (acknowledged or ready-for-deletion -> draining)
    only on a failed one."""
    d = decide(state, f)
    if d.kind == "effect" and d.effect is Effect.MAKE_INELIGIBLE:
        assert f.durable is True and f.guard is Guard.OK
    if d.kind != "write":
        return
    if d.state is F:
        assert state is A and f.unregistered and f.listed is False and f.standby_out is True
    elif d.state is A:
        assert f.ineligible_done and f.removal_done and f.listed is False and f.standby_out is True
    elif d.state is D and state in (A, F):
        assert f.listed or f.standby_out is False
    elif d.state is D:
        assert state is R and f.guard is Guard.OK and f.durable is True
