"""Drains on real Multigres v0.1.0 that meet faults, under a steady SQL write load (the representative
subset run by `make test`; the rest of the matrix is test_drain_faults_soak.py, `make soak-matrix`).

1. The agent is SIGKILLed right before each of its drain side effects in turn (it kills itself at
   that exact point; see MultigresStack.restart_agent) and started again: the drain finishes.
2. The race: the drained standby comes back (its multipooler restarts with the same service id, so
   it is ELIGIBLE again and multiorch re-adds it), once in `acknowledged` and once in
   `ready-for-deletion`: each time the agent takes the drain back to `draining` (DrainRegressed) and
   the pod is only deleted after it is out again.

Every drain is judged by the same claims: every acknowledged write is present, no pod is deleted while
its standby is in the primary's synchronous_standby_names, and the drain ends in ready-for-deletion.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.playground.localstack import wait_for

from .safety import (
    DRAIN_EFFECTS_V01,
    SHARD,
    STACK_TIMEOUT,
    Watched,
    app_names,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    converge,
    drain_regressed_events,
    listed,
    no_record_left,
    note,
    scale,
    uids,
    wait_agent_crash,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
REPLICAS = 4  # one drain per test: 4 -> 3 -> 2


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    shard = lambda s: s.sample_shard(replicas=REPLICAS, name=SHARD)  # noqa: E731
    with watched_stack(tmp_path_factory.mktemp("faults"), shard, REPLICAS) as w:
        yield w


def _draining_pod(watched: Watched, state: str, before: dict[str, str]) -> str:
    """The one pod (of `before`) whose drain reached `state`."""
    def find() -> str | None:
        return next((before[uid] for uid in before if state in watched.timeline.drain_states(uid)), None)

    return wait_for(find, 300, f"a pod to reach {state}")


def _deleted(watched: Watched, before: dict[str, str]) -> list[str]:
    present = uids(watched.stack)
    return [uid for uid in before if uid not in present]


def test_agent_sigkilled_before_every_drain_side_effect(watched: Watched) -> None:
    stack = watched.stack
    before, names = uids(stack), app_names(stack)
    stack.restart_agent(crash_before=DRAIN_EFFECTS_V01[0])
    generation = scale(stack, REPLICAS - 1)
    for effect, following in itertools.pairwise([*DRAIN_EFFECTS_V01, None]):
        wait_agent_crash(stack, effect)
        stack.restart_agent(crash_before=following)
    converge(stack, generation, replicas=REPLICAS - 1)

    gone = _deleted(watched, before)
    assert len(gone) == 1
    assert watched.timeline.drain_states(gone[0]) == ["requested", "draining", "acknowledged", "ready-for-deletion"]
    assert_out_of_sync_set_when_deleted(watched, names, gone)
    assert_nothing_lost(watched)
    no_record_left(stack, [before[gone[0]]])
    assert stack.agent is not None and stack.agent.starts >= len(DRAIN_EFFECTS_V01) + 1


def test_a_standby_that_comes_back_is_drained_again_never_deleted_listed(watched: Watched) -> None:
    stack = watched.stack
    assert stack.operator is not None
    before, names = uids(stack), app_names(stack)
    stack.restart_agent(crash_before="unregister")  # hold the drain in `acknowledged`, its proof taken
    generation = scale(stack, REPLICAS - 2)
    wait_agent_crash(stack, "unregister")
    victim = _draining_pod(watched, keys.DrainState.ACKNOWLEDGED.value, before)
    app = stack.app_name(victim)

    # It comes back: its multipooler dies and the kubelet restarts it; the manual stop is forgotten,
    # so it is ELIGIBLE again, and (the agent being down) multiorch streams it and adds it back.
    stack.signal_pooler(victim, signal.SIGKILL)
    wait_for(lambda: listed(watched.sync.samples[-1].synchronous_standby_names, app), 180,
             f"multiorch to add {app} back to the synchronous set", interval=0.2)
    stack.operator.kill()  # the engine is held from here on, so only the agent's state decides
    stack.restart_agent()
    victim_uid = next(uid for uid, name in before.items() if name == victim)
    wait_for(lambda: watched.timeline.drain_states(victim_uid)[-1] == keys.DrainState.READY_FOR_DELETION, 300,
             "the drain to finish again")
    assert watched.timeline.drain_states(victim_uid)[:5] == [
        "requested", "draining", "acknowledged", "draining", "acknowledged"]
    assert not listed(watched.sync.samples[-1].synchronous_standby_names, app)

    # Again, now in ready-for-deletion where only the engine's delete is left (and the agent runs:
    # it may see the restarted pooler ELIGIBLE before multiorch re-adds it).
    stack.signal_pooler(victim, signal.SIGKILL)
    wait_for(lambda: watched.timeline.drain_states(victim_uid).count("ready-for-deletion") == 2, 300,
             "the drain to go back from ready-for-deletion and finish again")
    assert watched.timeline.drain_states(victim_uid) == [
        "requested", "draining", "acknowledged", "draining", "acknowledged", "ready-for-deletion",
        "draining", "acknowledged", "ready-for-deletion"]
    assert len(drain_regressed_events(stack, victim)) >= 2
    assert uids(stack).get(victim_uid) == victim, "the pod was deleted while the engine was held"

    stack.operator.start()
    converge(stack, generation, replicas=REPLICAS - 2)
    assert _deleted(watched, before) == [victim_uid]
    assert_out_of_sync_set_when_deleted(watched, names, [victim_uid])
    assert_nothing_lost(watched)
    no_record_left(stack, [victim])
    note("race: drain states of the returning standby", " -> ".join(watched.timeline.drain_states(victim_uid)))
