"""The reconcile engine against the real apiserver: a rig that runs passes and plays the outside
world between them (the kubelet helper for pod/PVC status, the fake agent for drains and roles)."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube import client as kube
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, Result, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.helpers.fake_agent import FakeAgent

POOL, CELL = "main", "z1"


def spec(replicas: int = 3, **pool: Any) -> Manifest:
    body: Manifest = {
        "clusterName": "demo",
        "globalTopoServer": {"address": "topo.invalid:2379", "rootPath": "/multigres/global"},
        "pools": {POOL: {"cells": [CELL], "replicasPerCell": replicas, **pool}},
    }
    return body


def create_shard(client: kube.KubeClient, namespace: str, name: str, body: Manifest) -> Manifest:
    """A MultigresShard `name` with spec `body`, as a user creates it."""
    return client.create({"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
                          "metadata": {"name": name, "namespace": namespace}, "spec": copy.deepcopy(body)},
                         field_manager="test")


def read_shard(client: kube.KubeClient, namespace: str, name: str) -> Manifest:
    """The MultigresShard `name` as the API server has it now (it must exist)."""
    found = client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name)
    assert found is not None
    return found


@dataclass
class Rig:
    client: kube.KubeClient
    namespace: str
    agent: FakeAgent
    kubelet: Any
    results: list[Result] = field(default_factory=list)
    clock: dt.datetime | None = None

    # --- one pass ----------------------------------------------------------------------------
    def run(self, body: Manifest | None = None, *, name: str | None = None, state: str = "present",
            check: bool = False, diff: bool = False, cleanup_timeout: float = 120.0) -> Result:
        self.client.counts.clear()
        definition = None
        if body is not None:
            definition = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
                          "metadata": {"name": "demo", "namespace": self.namespace}, "spec": body}
        request = Request(namespace=self.namespace, definition=definition, name=name, state=state,
                          check_mode=check, diff=diff, cleanup_timeout=cleanup_timeout)
        result = run_pass(self.client, request, self.clock)
        assert not result.failed, result.msg
        self.results.append(result)
        return result

    def world(self) -> None:
        """Everything outside the engine gets one turn: the agent, the kubelet, multiorch's roles."""
        self.agent.step()
        self.kubelet.mark_all_ready(self.namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
        self.kubelet.bind_all_pvcs(self.namespace)
        self.agent.publish_roles()
        self.kubelet.mark_deployments_available(self.namespace)

    def settle(self, body: Manifest | None = None, *, name: str | None = None, rounds: int = 40) -> Result:
        """Alternate passes and world turns until a pass has nothing to do and nothing to wait for."""
        for _ in range(rounds):
            result = self.run(body, name=name)
            if result.writes == 0 and result.requeue_after == 0:
                return result
            self.world()
        raise AssertionError(f"no convergence; last plan: {self.results[-1].plan}")

    # --- reading the cluster -------------------------------------------------------------------
    def pods(self) -> dict[str, Manifest]:
        sel = f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}"
        return {facts.name(p): p for p in self.client.list("v1", "Pod", self.namespace, sel)}

    def pvcs(self) -> dict[str, Manifest]:
        """The PVCs that are not being deleted. (A deleted claim keeps the kubernetes.io/pvc-protection
        finalizer until the pvc-protection controller sees no pod using it, so a claim with a
        deletionTimestamp counts as deleted.)"""
        found = self.client.list("v1", "PersistentVolumeClaim", self.namespace)
        return {facts.name(p): p for p in found if not facts.is_terminating(p)}

    def primary(self) -> str:
        return next(n for n, p in self.pods().items() if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY)

    def drained_pods(self) -> list[str]:
        """Pods the engine asked to drain, in order, over every pass so far."""
        out = []
        for result in self.results:
            for action in result.actions:
                if action["verb"] == "patch" and action["kind"] == "Pod" and action["reason"].startswith("drain pod "):
                    out.append(action["name"])
        return out

    def create_cr(self, body: Manifest) -> Manifest:
        cr = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
              "metadata": {"name": "demo", "namespace": self.namespace}, "spec": copy.deepcopy(body)}
        return self.client.create(cr, field_manager="test")

    def update_cr(self, body: Manifest) -> None:
        self.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, "demo",
                                {"spec": body}, field_manager="test")

    def cr(self) -> Manifest | None:
        return self.client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, "demo")
