"""Data-plane faults during rolling updates on real Multigres v0.1.0 (`make soak`; docs/reliability.md,
"Data-plane faults"): ROLL_COUNT (default 2) rolling updates, each replacing every pod of a 3-pod
shard under a write load through the multigateway, with the PostgreSQL of the first standby it drains
and then of the primary, as its own drain starts, SIGKILLed mid-drain; judged by the independent
checker like the other schedules.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from multigres_pools.playground.history import History

from .faultrun import ROLLING_KINDS, fault_stack, run_schedule, seed_from_env
from .safety import Watched

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, pytest.mark.timeout(3600)]
REPLICAS = 3
KINDS = tuple(ROLLING_KINDS)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[tuple[Watched, History]]:
    with fault_stack(tmp_path_factory.mktemp("faults-roll"), REPLICAS, KINDS) as pair:
        yield pair


def test_faults_during_rolling_updates(recorded: tuple[Watched, History]) -> None:
    watched, history = recorded
    verdict = run_schedule(watched, history, REPLICAS, seed_from_env(1128), int(os.environ.get("ROLL_COUNT", "2")),
                           KINDS, __file__, count_var="ROLL_COUNT")
    assert verdict.problems() == []
    assert all(f.survived for f in verdict.faults)
