"""The pure drain transitions: what may advance, what must wait, and what force does."""

from __future__ import annotations

import itertools

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState
from hypothesis import given
from hypothesis import strategies as st

from multigres_pools.agent.drain import Blocked, Effect, Facts, Guard, Need, decide
from multigres_pools.agent.drain_runner import dns_label

R, D, A, F = DrainState.REQUESTED, DrainState.DRAINING, DrainState.ACKNOWLEDGED, DrainState.READY_FOR_DELETION


def walk(state: DrainState, facts: Facts, answers: dict) -> list[str]:
    """Play the executor with fixed answers; returns the trace of decisions."""
    trace = []
    for _ in range(20):
        d = decide(state, facts)
        trace.append(f"{d.kind}:{d.need or d.effect or d.state or d.reason}")
        if d.kind == "need":
            if d.need is Need.PRIMARY_GUARD:
                facts.guard = answers["guard"]
            elif facts.is_primary:
                facts.failover_target = answers["failover"]
            else:
                facts.listed = answers["listed"]
        elif d.kind == "effect":
            if d.effect is Effect.REMOVE_STANDBY:
                facts.removal_done = True
            else:
                facts.unregistered = True
        elif d.kind == "write":
            state = d.state
        else:
            return trace
    raise AssertionError(trace)


def test_happy_path_order() -> None:
    trace = walk(R, Facts(), {"guard": Guard.OK, "listed": False})
    assert trace == ["need:primary-guard", "write:draining", "effect:remove-standby", "need:sync-replication",
                     "write:acknowledged", "effect:unregister", "write:ready-for-deletion", "done:"]


@pytest.mark.parametrize("guard", [g for g in Guard if g is not Guard.OK])
def test_no_rpc_before_the_primary_pod_is_ready(guard: Guard) -> None:
    for state in (R, D):
        trace = walk(state, Facts(), {"guard": guard})
        assert trace[-1] == f"block:{guard}"
        assert not any(t.startswith(("effect", "write")) for t in trace)


def test_still_listed_blocks_acknowledged() -> None:
    trace = walk(D, Facts(), {"guard": Guard.OK, "listed": True})
    assert trace[-1] == f"block:{Blocked.STILL_LISTED}"


def test_refusal_blocks_with_its_reason() -> None:
    assert decide(D, Facts(guard=Guard.OK, removal_error="last-sync-standby")).reason == "last-sync-standby"
    assert decide(D, Facts(guard=Guard.OK, removal_done=True, sync_error="primary-unreachable")).kind == "block"
    assert decide(A, Facts(unregister_error="topology-unavailable")).reason == "topology-unavailable"


def test_primary_needs_a_connected_sync_standby() -> None:
    assert walk(R, Facts(is_primary=True), {"failover": False})[-1] == f"block:{Blocked.NO_FAILOVER_TARGET}"
    trace = walk(R, Facts(is_primary=True), {"failover": True})
    assert "effect:remove-standby" not in trace and trace[-2] == "write:ready-for-deletion"


@pytest.mark.parametrize("state", [R, D, A])
def test_force_skips_exactly_one_step(state: DrainState) -> None:
    d = decide(state, Facts(force=state, guard=Guard.POD_NOT_READY, removal_error="x", unregister_error="y"))
    assert (d.kind, d.forced) == ("write", True)
    assert d.state == list(DrainState)[list(DrainState).index(state) + 1]
    other = next(s for s in (R, D, A) if s is not state)
    assert decide(state, Facts(force=other, guard=Guard.POD_NOT_READY)).forced is False


facts_strategy = st.builds(
    Facts, is_primary=st.booleans(), force=st.none(), guard=st.sampled_from([None, *Guard]),
    removal_error=st.sampled_from([None, "last-sync-standby"]), removal_done=st.booleans(),
    listed=st.sampled_from([None, True, False]), sync_error=st.sampled_from([None, "primary-unreachable"]),
    failover_target=st.sampled_from([None, True, False]), unregister_error=st.none(), unregistered=st.booleans(),
)


@given(st.sampled_from([R, D, A]), facts_strategy)
def test_fail_closed(state: DrainState, f: Facts) -> None:
    """Without force, a state is only left with its proof in hand."""
    d = decide(state, f)
    if d.kind != "write":
        return
    if state is D and not f.is_primary:
        assert f.guard is Guard.OK and f.removal_done and f.listed is False and f.sync_error is None
    if state in (R, D) and f.is_primary:
        assert f.failover_target is True
    if state is R and not f.is_primary:
        assert f.guard is Guard.OK
    if state is A:
        assert f.unregistered


def test_terminal_and_unknown_states_do_nothing() -> None:
    for state, f in itertools.product((None, F), (Facts(), Facts(force=F))):
        assert decide(state, f).kind == "done"


def test_only_a_finished_drain_is_out_of_dns_and_going_back_puts_the_name_back() -> None:
    """drain_runner.dns_label: the label goes in the write to ready-for-deletion and returns with a
    write away from it; every other step leaves it alone (None: no labels in the patch)."""
    assert dns_label(A, F) == {keys.LABEL_DNS: None}
    assert dns_label(F, D) == {keys.LABEL_DNS: keys.DNS_PUBLISHED}
    assert [dns_label(old, new) for old, new in ((R, D), (D, A), (A, D), (D, R))] == [None] * 4
