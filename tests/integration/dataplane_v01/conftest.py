"""A real Multigres v0.1.0 shard (local provisioner, one primary and two sync standbys) per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from multigres_pools.dataplane.base import Pooler
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground import toolchain as toolchain_module
from multigres_pools.playground.provisioned import ProvisionedShard
from tests.integration.dataplane_v01.support import make_healthy


@pytest.fixture(scope="package")
def shard() -> Iterator[ProvisionedShard]:
    # Cheap when installed; on a fresh machine this builds (3-5 minutes) under the cache's file lock.
    tc = toolchain_module.ensure(progress=lambda line: print(line, flush=True))
    with ProvisionedShard(tc) as mg:
        yield mg


@pytest.fixture(scope="package")
def dp(shard: ProvisionedShard) -> Iterator[V0_1]:
    # The records say `localhost`: the poolers' own namespace, reached from here at its bridge address.
    plane = V0_1(rpc_timeout=5, dial_host=lambda host: shard.address if host == "localhost" else host)
    yield plane
    plane.close()


@pytest.fixture
def healthy(shard: ProvisionedShard, dp: V0_1) -> Pooler:
    """Every pooler runs, is ELIGIBLE and registered, and the cohort holds all three; the leader."""
    return make_healthy(shard, dp)
