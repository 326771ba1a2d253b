"""One stack for the modules of this package: a 3-pod shard (`play`) under the write load and the
samplers of safety.Watched, started once and stopped after the package's last test (scope "package").

The modules run in file order on it: test_day2_on_multigres.py (fence, decommission, maintenance
window, pause, primary handovers with crashes, a standby promoted by hand; it leaves the shard serving
with 3 pods), then test_shard_on_multigres.py, which checks the shard as day-2 operations left it: one
primary and two synchronous standbys in SQL, etcd and labels, a replica deleted by hand back on its
volume, era-A pods refused, the status screen. Sharing spares one stack and one v0.1.0 bootstrap
(about 40 s of `make test`, issue #26)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..safety import SHARD, Watched, watched_stack

REPLICAS = 3


@pytest.fixture(scope="package")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    with watched_stack(tmp_path_factory.mktemp("day2"), lambda s: s.sample_shard(replicas=REPLICAS, name=SHARD),
                       REPLICAS) as w:
        yield w
