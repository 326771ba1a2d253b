"""One MultigresShard's life, step by step, under whichever operator runs the reconcile playbook: our
own or the operator-sdk Ansible Operator. The test (tests/integration/ansible_operator) checks what
each step leaves behind; the benchmark (bench/ansible_operator.py) times both operators on the same
steps in one run.

The harness runs no kubelet, volume binder or agent: World plays them (FakeKubelet marks pods Ready
and binds PVCs, FakeAgent walks drains, publishes roles and answers the topology cleanup)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground.kubelet import FakeKubelet
from tests.helpers.fake_agent import FakeAgent
from tests.helpers.polling import eventually
from tests.integration.operator.rig import shard_doc

NAME = "aop"
POOL_PODS = f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}"
DEADLINE = 240  # generous: a step is seconds (docs/performance.md); a failure shows the log
ALLOWED_IMAGES = "ghcr.io/multigres/*"  # the operator's policy, so that a spec can be refused
REFUSED_IMAGE = "evil.example/postgres:17"


class World(threading.Thread):
    """The kubelet, volume binder and agent the harness lacks, every 0.2 s until stopped."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        super().__init__(daemon=True)
        self.kubelet = FakeKubelet(api_client)
        self.agent = FakeAgent(api_client, namespace)
        self.namespace, self.done = namespace, threading.Event()
        self.error: Exception | None = None
        self.drains_held = threading.Event()  # set: drains wait where they are (a slow drain)

    def run(self) -> None:
        while not self.done.wait(0.2):
            try:
                self.kubelet.mark_all_ready(self.namespace, POOL_PODS)
                self.kubelet.bind_all_pvcs(self.namespace)
                self.kubelet.mark_deployments_available(self.namespace)
                self.agent.publish_roles()
                if not self.drains_held.is_set():
                    self.agent.step()
                self.agent.complete_topology_cleanup(NAME)
            except Exception as exc:  # a write that raced the operator's: the next round retries
                self.error = exc


@contextmanager
def world(api_client: Any, namespace: str) -> Iterator[World]:
    w = World(api_client, namespace)
    w.start()
    try:
        yield w
    finally:
        w.done.set()
        w.join(10)


def _shard(client: KubeClient, namespace: str) -> dict[str, Any]:
    return client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, NAME) or {}


def converged(client: KubeClient, namespace: str, replicas: int) -> bool:
    cr = _shard(client, namespace)
    pods = [p for p in client.list("v1", "Pod", namespace, POOL_PODS) if not facts.is_terminating(p)]
    return (facts.condition_true(cr, "Ready")
            and (cr.get("status") or {}).get("observedGeneration") == facts.meta(cr).get("generation")
            and len(pods) == replicas and not any(facts.annotations(p).get(keys.ANN_DRAIN_STATE) for p in pods))


def draining(client: KubeClient, namespace: str) -> list[str]:
    """Pool pods with a drain state."""
    return [facts.name(p) for p in client.list("v1", "Pod", namespace, POOL_PODS)
            if facts.annotations(p).get(keys.ANN_DRAIN_STATE)]


def refusal(cr: dict[str, Any]) -> str:
    """The message of the shard's ConfigurationValid=False, or ""."""
    cond = facts.condition(cr, "ConfigurationValid") or {}
    return str(cond.get("message") or "") if cond.get("status") == "False" else ""


def pool_pod_uids(client: KubeClient, namespace: str) -> list[str]:
    return sorted(p["metadata"]["uid"] for p in client.list("v1", "Pod", namespace, POOL_PODS))


class Steps:
    """Each method makes one change and returns once the shard shows its outcome, timed in `seconds`.
    `diagnose` adds the operator's log to a step that did not finish."""

    def __init__(self, client: KubeClient, namespace: str, diagnose: Callable[[], str] = str) -> None:
        self.client, self.namespace, self.diagnose = client, namespace, diagnose
        self.seconds: dict[str, float] = {}

    def _until(self, what: str, done: Callable[[], bool], started: float) -> None:
        try:
            eventually(done, DEADLINE, what, interval=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnose()}") from None
        self.seconds[what] = time.monotonic() - started

    def _patch(self, patch: dict[str, Any]) -> float:
        started = time.monotonic()
        self.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, NAME, {"spec": patch},
                                field_manager="test")
        return started

    def create(self, replicas: int) -> None:
        started = time.monotonic()
        self.client.create(shard_doc(self.namespace, NAME, replicas), field_manager="test")
        self._until(f"create ({replicas} replicas)", lambda: converged(self.client, self.namespace, replicas),
                    started)

    def scale(self, replicas: int) -> None:
        started = self._patch({"pools": {"main": {"replicasPerCell": replicas}}})
        self._until(f"scale to {replicas}", lambda: converged(self.client, self.namespace, replicas), started)

    def refuse(self) -> None:
        """An image the policy does not allow (the CRD admits it): ConfigurationValid=False names it."""
        started = self._patch({"images": {"postgres": REFUSED_IMAGE}})
        self._until("spec refused", lambda: refusal(_shard(self.client, self.namespace)).startswith(
            f"spec.images.postgres: image '{REFUSED_IMAGE}' is not allowed"), started)

    def fix_refusal(self, replicas: int) -> None:
        started = self._patch({"images": None})
        self._until("refusal fixed", lambda: converged(self.client, self.namespace, replicas), started)

    def delete_pod(self, replicas: int) -> None:
        victim = sorted(p["metadata"]["name"] for p in self.client.list("v1", "Pod", self.namespace, POOL_PODS))[-1]
        started = time.monotonic()
        self.client.delete("v1", "Pod", self.namespace, victim)
        self._until("pod deleted", lambda: converged(self.client, self.namespace, replicas), started)

    def delete_shard(self) -> None:
        started = time.monotonic()
        self.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace, NAME)
        self._until("delete", lambda: self.client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, self.namespace,
                                                      NAME) is None, started)
