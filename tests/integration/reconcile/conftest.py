"""Fixtures for the reconcile engine's cluster tests: our client, the fake agent, the CRD."""

from __future__ import annotations

import uuid

import pytest
from ansible_collections.multigres.pools.plugins.module_utils import kube

from multigres_pools.playground.localstack import install_crd
from tests.helpers.fake_agent import FakeAgent
from tests.integration.reconcile.rig import Rig


@pytest.fixture(scope="session")
def shard_crd(kube):  # type: ignore[no-untyped-def]
    """The MultigresShard CRD, for tests where a CR drives the pass."""
    install_crd(kube_client(kube))


def kube_client(kube_fixture) -> kube.KubeClient:  # type: ignore[no-untyped-def]
    return kube.connect(str(kube_fixture.kubeconfig))


@pytest.fixture
def rig(kube, namespace, kubelet):  # type: ignore[no-untyped-def]
    return Rig(kube_client(kube), namespace, FakeAgent(kube.api_client(), namespace), kubelet)


@pytest.fixture
def expandable_class(rig):  # type: ignore[no-untyped-def]
    """A StorageClass that allows volume expansion (the PVC resize admission plugin checks it)."""
    name = f"expandable-{uuid.uuid4().hex[:6]}"
    rig.client.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                      "provisioner": "example.com/none", "allowVolumeExpansion": True}, "test")
    yield name
    rig.client.delete("storage.k8s.io/v1", "StorageClass", None, name)
