"""5 -> 3 across two cells on real Multigres v0.1.0, under a steady SQL write load (`make soak-matrix`).

replicasPerCell applies to every cell of a pool, so one pool over two cells only goes 6 -> 4 or
4 -> 2; exactly 5 -> 3 takes two pools of one shard: `default` over zone1 and zone2 (2 per cell,
scaled to 1) and `spare` in zone1 (1). Each cell runs its own multiorch and multigateway; the cells
and the database are registered by the agent, each pooler under its own cell. Both removed pods are
drained out of the synchronous set before deletion (one per cell), nothing acknowledged is lost, no
record of them is left, and no two pods are ever labelled PRIMARY. A rolling update of the 5 comes
first: with two multiorchs, it shows whether a recreated pod (same service id) flaps in the cohort.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from multigres_pools.playground.multigres_stack import MultigresStack

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
    replacement_phases,
    scale,
    uids,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, STACK_TIMEOUT]
CELLS = ("zone1", "zone2")


def two_cells(stack: MultigresStack) -> dict[str, Any]:
    doc = stack.sample_shard(replicas=2, name=SHARD)
    pool = doc["spec"]["pools"]["default"]
    pool["cells"] = list(CELLS)
    doc["spec"]["pools"]["spare"] = {**copy.deepcopy(pool), "cells": ["zone1"], "replicasPerCell": 1}
    return doc


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("cells"), two_cells, 5) as w:
        yield w


def test_rolling_update_over_two_cells_with_a_multiorch_each(watched: Watched) -> None:
    """Each recreated pod keeps its service id; with two multiorchs, one may still hold the drained
    pooler's INELIGIBLE health while the other re-adds it (docs/agent.md): the phases show it."""
    stack = watched.stack
    before = uids(stack)
    converge(stack, apply(stack, lambda spec: spec.setdefault("logLevels", {}).update(multipooler="debug")),
             replicas=5)
    assert all(uid not in uids(stack) for uid in before), "every pod was replaced"
    assert_nothing_lost(watched)
    assert primary_label_overlaps(list(watched.timeline.events)) == []
    for name, phases in replacement_phases(watched, before).items():
        note(f"replacing {name[-9:]}, seconds after its drain request", phases)


def test_five_to_three_across_two_cells(watched: Watched) -> None:
    stack = watched.stack
    before, names = uids(stack), app_names(stack)
    assert {ident.cell for ident in stack.pooler_ids().values()} == set(CELLS)
    primary = stack.primary()
    assert primary is not None

    converge(stack, scale(stack, 1), replicas=3)

    gone = [uid for uid in before if uid not in uids(stack)]
    assert len(gone) == 2
    assert {names[uid].split("_")[0] for uid in gone} == set(CELLS), "one pod left each cell of `default`"
    standbys = [uid for uid in gone if before[uid] != primary.pod]
    assert_out_of_sync_set_when_deleted(watched, names, standbys)
    for uid in gone:
        assert "ready-for-deletion" in watched.timeline.drain_states(uid)
    assert_nothing_lost(watched)
    no_record_left(stack, [before[uid] for uid in gone], cells=CELLS)
    assert primary_label_overlaps(list(watched.timeline.events)) == []
    note("5 -> 3 across two cells: drained", {before[uid][-7:]: watched.timeline.drain_states(uid) for uid in gone})
