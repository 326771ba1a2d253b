"""The real Multigres v0.1.0 toolchain (built once per machine; see docs/dependencies.md)."""

from __future__ import annotations

import pytest

from multigres_pools.playground import toolchain as toolchain_module
from multigres_pools.playground.toolchain import Toolchain


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    # Cheap when installed; on a fresh machine this builds (3-5 minutes) under the cache's file lock.
    return toolchain_module.ensure(progress=lambda line: print(line, flush=True))
