"""One stack for the modules of this package: a shard (`play`, 3 pool pods) with a filesystem backup
repository, under the write load and the samplers of safety.Watched, started once and stopped after the
package's last test (scope "package").

The modules run in file order on it. test_clone_on_multigres.py comes first: it clones the healthy
shard into a second shard of the same stack (its own clusterName, so the samplers and the stack's
helpers, scoped by clusterName, never count its pods) and deletes the clone with its volumes at the
end. test_restore_on_multigres.py then drills, loses and restores the shard. Sharing spares one stack
and one v0.1.0 bootstrap (about 45 s of `make test`, issue #26)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..faultrun import KUBELET_BACKOFF
from ..safety import Watched, watched_stack
from .stack import REPLICAS, shard_spec


@pytest.fixture(scope="package")
def watched(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[Watched]:
    # The kubelet's crash-loop back-off as in the fault runs (2-20 s, not 10 s-5 min): a held pod's
    # repository check passes on its next retry once the repository is back, and no test waits out a
    # 5-minute back-off; the agent checks backups every 3 s.
    with watched_stack(tmp_path_factory.mktemp("repository"), shard_spec, REPLICAS,
                       agent_args=("--backup-interval", "3"), kubelet_backoff=KUBELET_BACKOFF) as w:
        yield w
