from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.agent.rig import ShardRig


@pytest.fixture
def rig_factory(kube, namespace, kubelet, topo_etcd) -> Iterator:
    made: list[ShardRig] = []

    def make(**kw) -> ShardRig:
        primary, sync = kw.pop("primary", 0), kw.pop("sync", None)
        rig = ShardRig(kube.api_client(), namespace, topo_etcd.endpoint, kube.client(), **kw).start(primary, sync)
        kubelet.mark_all_ready(namespace)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.stop()
