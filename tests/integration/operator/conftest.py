"""The operator tests' engine client, with the MultigresShard CRD installed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.kube import KubeClient, connect

from multigres_pools.playground.localstack import install_crd


@pytest.fixture
def client(kube) -> Iterator[KubeClient]:  # type: ignore[no-untyped-def]
    c = connect(str(kube.kubeconfig))
    install_crd(c)
    yield c
    c.close()
