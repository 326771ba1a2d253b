"""The seeded data-plane fault schedule on real Multigres v0.1.0 (`make soak`; docs/reliability.md,
"Data-plane faults"): FAULT_COUNT faults (default 100) of every kind the injectors make real, drawn
from FAULT_SEED (printed with the command that reproduces it), each one recovered from before the
next, judged by the independent checker over the recorded history. FAULT_KINDS=a,b plays only
those kinds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from multigres_pools.playground.history import History

from .faultrun import fault_stack, kinds_from_env, run_schedule, seed_from_env
from .safety import Watched

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, pytest.mark.timeout(5400)]
REPLICAS = 3


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[tuple[Watched, History]]:
    with fault_stack(tmp_path_factory.mktemp("faults-soak"), REPLICAS, kinds_from_env()) as pair:
        yield pair


def test_faults_soak(recorded: tuple[Watched, History]) -> None:
    watched, history = recorded
    count = int(os.environ.get("FAULT_COUNT", "100"))
    kinds = kinds_from_env()
    verdict = run_schedule(watched, history, REPLICAS, seed_from_env(1127), count, kinds, __file__)
    assert verdict.problems() == []
    assert all(f.survived for f in verdict.faults)

