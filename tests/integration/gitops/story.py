"""The steps both GitOps tests (Flux, ArgoCD) tell the same way on real Multigres: a commit that
scales the shard down goes through our drain with nothing lost, the tool restarted while the drain
runs. Only how a tool is given a commit, restarted and asked whether it applied it differs."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from tests.integration.multigres.safety import (
    SHARD,
    Watched,
    app_names,
    assert_nothing_lost,
    assert_out_of_sync_set_when_deleted,
    no_record_left,
    uids,
)


def scale_down_through_the_drain(stack: MultigresStack, watched: Watched, shard: dict[str, Any],
                                 commit: Callable[[dict[str, Any]], str], restart: Callable[[], None],
                                 applied: Callable[[str], object]) -> float:
    """`commit` the shard at 2 replicas a cell (and ask the tool to look), `restart` the tool once our
    drain has begun (its work was the apply; the drain goes on without it), wait until `applied`
    says the tool has that commit applied and healthy; then one standby went, out of the
    synchronous set before its pod, its topology record too, and no acknowledged write was lost.
    Returns the seconds from the commit to the tool's answer."""
    names, before = dict(app_names(stack)), uids(stack)
    smaller = copy.deepcopy(shard)
    smaller["spec"]["pools"]["default"]["replicasPerCell"] = 2
    started = time.monotonic()
    down = commit(smaller)
    wait_for(lambda: any(keys.ANN_DRAIN_STATE in facts.annotations(p) for p in stack.pods()), 300,
             "the scale-down's drain to start", interval=0.2)
    restart()
    applied(down)
    elapsed = time.monotonic() - started
    stack.wait_serving(SHARD, replicas=2, timeout=600)
    removed = [uid for uid in before if uid not in uids(stack)]
    assert len(removed) == 1, removed
    assert_out_of_sync_set_when_deleted(watched, names, removed)
    no_record_left(stack, [before[uid] for uid in removed])
    assert_nothing_lost(watched)
    return elapsed
