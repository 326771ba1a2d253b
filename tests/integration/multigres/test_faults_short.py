"""Data-plane faults on real Multigres v0.1.0, the short seeded subset run by `make test` (the long
schedule is test_faults_soak.py, `make soak`; both in docs/reliability.md, "Data-plane faults").

One fault of each of eight kinds, in the order and with the pauses the seed draws, under a write load
through the multigateway whose every operation is recorded: the primary's PostgreSQL SIGKILLed, a
standby's PostgreSQL SIGKILLed while a scale-down drains it, every multiorch SIGKILLed, the primary's
pod frozen (SIGSTOP) and thawed, the primary cut off from its standbys (nftables in its netns) and
healed, the primary's and a standby's data volume filled to its last byte and emptied again (the
claims are then filesystems of their own; the standby's PostgreSQL stays down, and its pod is
drained and recreated), and the primary's volume slowed to 2 writes a second. The independent
checker (history_check) then requires: every acknowledged write present, no failed write present,
never two pods out of recovery, no write acknowledged in an older term, no standby deleted while
listed, each fault followed by acknowledged writes; and nothing of a fault is left (no nftables
table, no stopped process, no filler, no throttle cgroup).
"""

from __future__ import annotations

import pytest

from .faultrun import DRAINING_STANDBY, Schedule, judged_run
from .safety import STACK_TIMEOUT

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]
KINDS = ("postgres-kill-primary", DRAINING_STANDBY, "multiorch-kill", "freeze-primary", "partition-primary",
         "disk-full-primary", "disk-full-standby", "slow-disk-primary")
SCHEDULE = Schedule("faults", KINDS, seed=27, count=len(KINDS))


def test_one_fault_of_each_kind_loses_nothing(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> None:
    judged_run(tmp_path_factory.mktemp(SCHEDULE.name), SCHEDULE, __file__)
