"""Fixtures for the reconcile engine's cluster tests: our client, the fake agent, the CRD."""

from __future__ import annotations

import uuid

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient

from tests.helpers.fake_agent import FakeAgent
from tests.integration.reconcile.rig import Rig


@pytest.fixture
def shard_crd(kube_client: KubeClient) -> None:
    """The MultigresShard CRD, for tests where a CR drives the pass (kube_client installs it)."""


@pytest.fixture
def rig(kube, namespace, kubelet, kube_client):  # type: ignore[no-untyped-def]
    return Rig(kube_client, namespace, FakeAgent(kube.api_client(), namespace), kubelet)


@pytest.fixture
def expandable_class(rig):  # type: ignore[no-untyped-def]
    """A StorageClass that allows volume expansion (the PVC resize admission plugin checks it)."""
    name = f"expandable-{uuid.uuid4().hex[:6]}"
    rig.client.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                      "provisioner": "example.com/none", "allowVolumeExpansion": True}, "test")
    yield name
    rig.client.delete("storage.k8s.io/v1", "StorageClass", None, name)
