"""Data-plane faults during rolling updates on real Multigres v0.1.0 (`make soak`; docs/reliability.md,
"Data-plane faults"): ROLL_COUNT (default 2) rolling updates, each replacing every pod of a 3-pod
shard under a write load through the multigateway, with the PostgreSQL of the first standby it drains
and then of the primary, as its own drain starts, SIGKILLed mid-drain; judged by the independent
checker like the other schedules.
"""

from __future__ import annotations

import pytest

from .faultrun import ROLLING_KINDS, Schedule, judged_run

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, pytest.mark.timeout(3600)]
SCHEDULE = Schedule("faults-roll", tuple(ROLLING_KINDS), seed=1128, count=2, count_var="ROLL_COUNT")


def test_faults_during_rolling_updates(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> None:
    judged_run(tmp_path_factory.mktemp(SCHEDULE.name), SCHEDULE, __file__)
