"""The seeded data-plane fault schedule on real Multigres v0.1.0 (`make soak`; docs/reliability.md,
"Data-plane faults"): FAULT_COUNT faults (default 100) of every kind the injectors make real, drawn
from FAULT_SEED (printed with the command that reproduces it), each one recovered from before the
next, judged by the independent checker over the recorded history. FAULT_KINDS=a,b plays only
those kinds.
"""

from __future__ import annotations

import pytest

from .faultrun import KINDS, Schedule, judged_run

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, pytest.mark.timeout(5400)]
SCHEDULE = Schedule("faults-soak", tuple(KINDS), seed=1127, count=100)


def test_faults_soak(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> None:
    judged_run(tmp_path_factory.mktemp(SCHEDULE.name), SCHEDULE, __file__)
