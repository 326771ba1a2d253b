"""Data safety on real Multigres v0.1.0 and PostgreSQL 17, under a steady SQL write load, with the
operator, the agent and a live multiorch: a rolling update replaces one pod at a time and the
primary last, never with two pods labelled PRIMARY; a scale-down deletes only pods that had left the
synchronous set; no write that PostgreSQL acknowledged is ever missing afterwards. (Order matters:
the roll needs 3 replicas.)

The same claims are proven in `make test` on the real node (containers on a real kubelet, the
operator and the agent from the bundle): tests/integration/realnode/test_shard_on_real_node.py. This
process-kubelet copy runs with `make soak-matrix`, beside the fault variants built on it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from .safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    app_names,
    apply,
    assert_never_two_writable,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    assert_primary_handed_over,
    assert_replaced_one_at_a_time_primary_last,
    converge,
    first_terminating,
    no_record_left,
    note,
    primary_label_overlaps,
    replacement_phases,
    scale,
    uids,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, STACK_TIMEOUT]


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("drain"), lambda s: s.sample_shard(replicas=3, name=SHARD), 3) as w:
        yield w


def test_rolling_update_one_pod_at_a_time_primary_last_nothing_lost(watched: Watched) -> None:
    stack = watched.stack
    before = uids(stack)
    names = app_names(stack)
    primary = stack.primary()
    assert primary is not None
    primary_uid = next(uid for uid, name in before.items() if name == primary.pod)
    acked_before = len(watched.load.acked)

    generation = apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug"))
    converge(stack, generation, replicas=3)
    assert_nothing_lost(watched)
    assert_never_two_writable(watched)
    assert_primary_handed_over(stack, primary.pod)

    deleted = assert_replaced_one_at_a_time_primary_last(watched, before, primary_uid)
    assert_out_of_sync_set_when_deleted(watched, names, deleted[:-1])
    assert len(watched.load.acked) > acked_before
    # The old primary comes back on its volume still leading its own, older rule: only the leader the
    # agent confirms is labelled PRIMARY, so no two pods ever carry the label (every pod version seen).
    assert primary_label_overlaps(list(watched.timeline.events)) == []
    acks, lost_primary = list(watched.load.ack_times), first_terminating(watched, primary_uid) or 0.0
    gaps = sorted(((b - a, a - lost_primary) for a, b in itertools.pairwise(acks)), reverse=True)[:3]
    note("rolling update: longest stretches without an acknowledged write (s, started s after the "
         "primary's pod was deleted)", [(round(g, 2), round(at, 1)) for g, at in gaps])
    for name, phases in replacement_phases(watched, before).items():
        note(f"replacing pod {name[-1]}, seconds after its drain request", phases)


def test_scale_down_deletes_only_pods_out_of_the_synchronous_set_nothing_lost(watched: Watched) -> None:
    stack = watched.stack
    before = uids(stack)
    names = app_names(stack)

    generation = scale(stack, 2)
    converge(stack, generation, replicas=2)
    assert_nothing_lost(watched)

    gone = [uid for uid in before if uid not in {facts.uid(p) for p in stack.pods()}]
    assert len(gone) == 1
    assert_out_of_sync_set_when_deleted(watched, names, gone)
    no_record_left(stack, [before[gone[0]]])
    assert primary_label_overlaps(list(watched.timeline.events)) == []
