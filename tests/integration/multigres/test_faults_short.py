"""Data-plane faults on real Multigres v0.1.0, the short seeded subset run by `make test` (the long
schedule is test_faults_soak.py, `make soak`; both in docs/reliability.md, "Data-plane faults").

One fault of each of eight kinds, in the order and with the pauses the seed draws, under a write load
through the multigateway whose every operation is recorded: the primary's PostgreSQL SIGKILLed, a
standby's PostgreSQL SIGKILLed while a scale-down drains it, every multiorch SIGKILLed, the primary's
pod frozen (SIGSTOP) and thawed, the primary cut off from its standbys (nftables in its netns) and
healed, the primary's and a standby's data volume filled to its last byte and emptied again (the
claims are then filesystems of their own; the standby's PostgreSQL stays down, and its pod is
drained and recreated), and the primary's volume slowed to 10 writes a second. The independent
checker (history_check) then requires: every acknowledged write present, no failed write present,
never two pods out of recovery, no write acknowledged in an older term, no standby deleted while
listed, each fault followed by acknowledged writes; and nothing of a fault is left (no nftables
table, no stopped process, no filler, no throttle cgroup).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from multigres_pools.playground.history import History

from .faultrun import DRAINING_STANDBY, fault_stack, run_schedule, seed_from_env
from .safety import STACK_TIMEOUT, Watched

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
REPLICAS = 3
KINDS = ("postgres-kill-primary", DRAINING_STANDBY, "multiorch-kill", "freeze-primary", "partition-primary",
         "disk-full-primary", "disk-full-standby", "slow-disk-primary")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[tuple[Watched, History]]:
    with fault_stack(tmp_path_factory.mktemp("faults"), REPLICAS, KINDS) as pair:
        yield pair


def test_one_fault_of_each_kind_loses_nothing(recorded: tuple[Watched, History]) -> None:
    watched, history = recorded
    verdict = run_schedule(watched, history, REPLICAS, seed_from_env(27), len(KINDS), KINDS,
                           __file__)
    assert verdict.problems() == []
    assert verdict.acknowledged > 0 and all(f.survived for f in verdict.faults)
