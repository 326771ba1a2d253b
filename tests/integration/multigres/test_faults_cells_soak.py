"""A cut between two cells on real Multigres v0.1.0 (`make soak`; docs/reliability.md, "Data-plane
faults"): a shard of 4 pods, 2 in zone1 and 2 in zone2, each cell with its own multiorch and
multigateway, under a write load through the first multigateway. Every pod of one cell loses the pods
of the other (nftables in each of its network namespaces), both still reach the topology etcd: the
primary's cell cut from the other, and the other cut from the primary's, held 2-20 s (past
multiorch's failover grace), CELL_COUNT (default 6) faults from FAULT_SEED, judged by the same
independent checker: nothing acknowledged lost, no write acknowledged in an older term, no two
primaries' acknowledgements interleaved. Samples with two servers out of recovery are printed, not
failed on: after a cut longer than its leader threshold, the multiorch of the cell without the primary
may fail over a healthy primary once the cut has healed, and v0.1.0 leaves the old one out of recovery
until it is demoted (about 2 s); its standbys, recruited into the new term, acknowledge nothing for it
(docs/reliability.md, findings).
"""

from __future__ import annotations

from typing import Any

import pytest

from multigres_pools.playground.multigres_stack import MultigresStack

from .faultrun import CELL_KINDS, Schedule, judged_run
from .safety import SHARD

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, pytest.mark.soak, pytest.mark.timeout(3600)]
CELLS = ("zone1", "zone2")
PER_CELL = 2


def two_cells(stack: MultigresStack) -> dict[str, Any]:
    doc = stack.sample_shard(replicas=PER_CELL, name=SHARD)
    doc["spec"]["pools"]["default"]["cells"] = list(CELLS)
    return doc


SCHEDULE = Schedule("faults-cells", tuple(CELL_KINDS), seed=1130, count=6, count_var="CELL_COUNT",
                    replicas=PER_CELL * len(CELLS), shard=two_cells, hold_max_s=20.0,
                    two_writable_allowed=True)


def test_a_cut_between_two_cells_loses_nothing(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> None:
    judged_run(tmp_path_factory.mktemp(SCHEDULE.name), SCHEDULE, __file__)
