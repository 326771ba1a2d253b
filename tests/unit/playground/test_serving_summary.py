"""The one line a wait for a serving shard prints each time it changes (localstack up, the demo)."""

from __future__ import annotations

from multigres_pools.playground.multigres_stack import serving_summary


def test_it_says_how_far_the_shard_is():
    assert serving_summary(0, 3, None, 0) == "0/3 pods ready, no primary yet, 0/2 synchronous standbys"
    assert serving_summary(3, 3, "play-0", 1) == "3/3 pods ready, primary play-0, 1/2 synchronous standbys"
    assert serving_summary(1, 1, "play-0", 0) == "1/1 pods ready, primary play-0"
