"""The rest of the drain fault matrix on real Multigres v0.1.0, under a steady SQL write load
(`make soak-matrix`; the representative subset is test_drain_faults.py). One shard of 5 replicas, each
test taking one step down or one roll:

- 5 -> 4: the draining standby's multipooler is SIGKILLed the moment its drain reaches `draining`
  (the kubelet restarts it at once: it comes back ELIGIBLE, with its record);
- 4 -> 3: the primary's pod is deleted while a standby drains (its multipooler stops gracefully and
  stays gone, so multiorch fails over): the drain continues against the new primary;
- a rolling update of the 3 with the agent SIGKILLed before each side effect of the PRIMARY's drain
  (its record is deleted before its pod: the agent must still know it is the primary after a crash);
- 3 -> 2: the primary's multipooler is SIGKILLed while a standby drains. v0.1.0 does not fail over
  for that: the kubelet restarts it in about a second, and multiorch holds a failover while the
  replicas still stream from the primary's PostgreSQL (`leader-postgres-response-threshold`, 30 s).

Each drain finishes (or stays held while it cannot be proven), no pod is deleted while its standby is
in the primary's synchronous_standby_names, every acknowledged write is present, and no two pods are
ever labelled PRIMARY.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.playground.localstack import PodEvent, wait_for

from .safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    app_names,
    apply,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    converge,
    no_record_left,
    note,
    primary_label_overlaps,
    scale,
    uids,
    wait_agent_crash,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, STACK_TIMEOUT]
PRIMARY_DRAIN_EFFECTS = ("write:draining", "write:acknowledged", "unregister", "write:ready-for-deletion")


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("soak"), lambda s: s.sample_shard(replicas=5, name=SHARD), 5) as w:
        yield w


class At:
    """A PodTimeline listener: the first time a pod's drain reaches `state`, run `act(event)` (on the
    watch thread, a few milliseconds after the agent wrote the state)."""

    def __init__(self, state: str, act: Callable[[PodEvent], object]) -> None:
        self.state, self.act = state, act
        self.fired: tuple[float, str, object] | None = None

    def __call__(self, event: PodEvent) -> None:
        if self.fired is None and event.drain == self.state:
            self.fired = (time.monotonic(), event.name, self.act(event))


def kill(pids: list[int], sig: int) -> list[int]:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return pids


def _scale_down_with(watched: Watched, fault: At, replicas: int) -> str:
    """Scale to `replicas` with `fault` armed; judge the drain; returns the deleted pod's uid."""
    stack = watched.stack
    before, names = uids(stack), app_names(stack)
    watched.timeline.listeners.append(fault)
    try:
        converge(stack, scale(stack, replicas), replicas=replicas)
    finally:
        watched.timeline.listeners.remove(fault)
    assert fault.fired is not None, "the fault never fired"
    # The drained pod; a pod the fault deleted by hand (and the operator recreated) went without one.
    gone = [uid for uid in before if uid not in uids(stack) and watched.timeline.drain_states(uid)]
    assert len(gone) == 1
    assert_out_of_sync_set_when_deleted(watched, names, gone)
    assert_nothing_lost(watched)
    no_record_left(stack, [before[gone[0]]])
    assert primary_label_overlaps(list(watched.timeline.events)) == []
    note(f"{replicas + 1} -> {replicas}: drain states of the deleted pod", watched.timeline.drain_states(gone[0]))
    return gone[0]


def _pooler_pids(watched: Watched) -> dict[str, list[int]]:
    """Taken before the change, so the listener acts within milliseconds of the drain state."""
    return {name: watched.stack.pooler_pids(name) for name in watched.stack.pooler_ids()}


def test_draining_standbys_multipooler_sigkilled_mid_drain(watched: Watched) -> None:
    pids = _pooler_pids(watched)
    _scale_down_with(watched, At("draining", lambda e: kill(pids[e.name], signal.SIGKILL)), replicas=4)


def test_primary_fails_over_while_a_standby_drains(watched: Watched) -> None:
    """The primary's pod is deleted the moment a standby's drain reaches `draining` (a lost node): its
    multipooler stops gracefully (INELIGIBLE) and does not come back, so multiorch elects another
    leader while the drain is under way. (Signals alone do not fail it over here: the kubelet restarts
    a stopped multipooler within seconds, inside multiorch's 4-12 s failover grace.)"""
    stack = watched.stack
    primary = stack.primary()
    assert primary is not None

    def lose_primary(_event: PodEvent) -> str:
        kube = stack.kube()
        try:
            kube.delete("v1", "Pod", stack.namespace, primary.pod)
        finally:
            kube.close()
        return primary.pod

    fault = At("draining", lose_primary)
    _scale_down_with(watched, fault, replicas=3)
    assert fault.fired is not None
    since = [e for e in watched.timeline.events if e.at > fault.fired[0]]
    leaders = [e.name[-1] for e in since if e.role == keys.Role.PRIMARY]
    note("primary lost mid-drain", f"{primary.pod[-1]} -> labelled PRIMARY since: {list(dict.fromkeys(leaders))}")
    assert any(e.role == keys.Role.PRIMARY and e.name != primary.pod for e in since), "no failover happened"


def test_rolling_update_with_the_agent_sigkilled_before_each_primary_drain_effect(watched: Watched) -> None:
    stack = watched.stack
    primary = stack.primary()
    assert primary is not None
    before = uids(stack)
    primary_uid = next(uid for uid, name in before.items() if name == primary.pod)
    generation = apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug"))

    wait_for(lambda: watched.timeline.drain_states(primary_uid), 900, "the primary's drain to be requested")
    done = watched.timeline.drain_states(primary_uid)
    remaining = [e for e in PRIMARY_DRAIN_EFFECTS if e.removeprefix("write:") not in done]
    stack.restart_agent(crash_before=remaining[0])
    for effect, following in itertools.pairwise([*remaining, None]):
        wait_agent_crash(stack, effect, timeout=600)
        stack.restart_agent(crash_before=following)
    converge(stack, generation, replicas=3)

    assert watched.timeline.drain_states(primary_uid) == ["requested", "draining", "acknowledged",
                                                          "ready-for-deletion"]
    assert all(uid not in uids(stack) for uid in before), "every pod was replaced"
    assert_nothing_lost(watched)
    assert primary_label_overlaps(list(watched.timeline.events)) == []


def test_primarys_multipooler_sigkilled_while_a_standby_drains(watched: Watched) -> None:
    primary = watched.stack.primary()
    assert primary is not None
    pids = _pooler_pids(watched)
    _scale_down_with(watched, At("draining", lambda e: kill(pids[primary.pod], signal.SIGKILL)), replicas=2)
    after = watched.stack.primary()
    note("primary after its multipooler was SIGKILLed mid-drain", "unchanged" if after and after.pod == primary.pod
         else f"moved to {after.pod if after else None}")
