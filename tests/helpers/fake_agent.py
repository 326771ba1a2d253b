"""TEST DOUBLE — plays the multigres.pools agent's part for the reconcile engine's integration tests.

The real agent (src/multigres_pools) talks to etcd and the multipoolers; here there are none, so
this helper performs only the agent's *Kubernetes-visible* behaviour as docs/agent.md documents it:

- publishes roles as the pod label `multigres.com/role` (PRIMARY / REPLICA / DRAINED);
- walks a requested drain one state per `step()`: requested -> draining -> acknowledged ->
  ready-for-deletion, each write conditional on the pod's resourceVersion (a drain the engine
  cancelled in between is not revived, the API answers 409 and the step is skipped);
- a drained PRIMARY loses its role label at `acknowledged` (era A has no switchover API: the
  record is deleted and multiorch fails over once the pod is gone);
- removes the pod finalizer `pools.multigres.com/pooler-unregister` of a pod deleted from outside
  once it has "unregistered" it: immediately when no drain runs on it, or at ready-for-deletion;
- answers the shard-deletion topology-cleanup request with `done` (or not at all, to test the
  engine's timeout).
"""

from __future__ import annotations

import itertools
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from kubernetes import client
from kubernetes.client.exceptions import ApiException

NEXT_STATE = dict(itertools.pairwise(keys.DRAIN_ORDER))


class FakeAgent:
    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.namespace = namespace

    def _pods(self) -> list[Any]:
        selector = f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}"
        return self.core.list_namespaced_pod(self.namespace, label_selector=selector).items

    def _patch(self, pod: Any, body: dict[str, Any]) -> bool:
        body.setdefault("metadata", {})["resourceVersion"] = pod.metadata.resource_version
        try:
            self.core.patch_namespaced_pod(pod.metadata.name, self.namespace, body,
                                           field_manager=keys.AGENT_FIELD_MANAGER)
            return True
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise

    # --- roles ---------------------------------------------------------------------------------
    def set_role(self, name: str, role: str | None) -> None:
        pod = self.core.read_namespaced_pod(name, self.namespace)
        self._patch(pod, {"metadata": {"labels": {keys.LABEL_ROLE: role}}})

    def publish_roles(self, primary: str | None = None) -> None:
        """PRIMARY on `primary` (default: the current PRIMARY, else the lowest-named Ready pod, as
        multiorch would elect one), REPLICA on every other live pod; DRAINED labels are kept, and a
        draining pod whose role was taken away stays without one."""
        pods = [p for p in self._pods() if p.metadata.deletion_timestamp is None]
        roles = {p.metadata.name: (p.metadata.labels or {}).get(keys.LABEL_ROLE) for p in pods}
        draining = {p.metadata.name for p in pods if (p.metadata.annotations or {}).get(keys.ANN_DRAIN_STATE)}
        if primary is None:
            current = [n for n, r in roles.items() if r == keys.Role.PRIMARY]
            ready = sorted(p.metadata.name for p in pods if _ready(p) and p.metadata.name not in draining
                           and roles[p.metadata.name] != keys.Role.DRAINED)
            primary = (current or ready or [None])[0]
        for pod in pods:
            name, role = pod.metadata.name, roles[pod.metadata.name]
            if role == keys.Role.DRAINED or (name in draining and role is None):
                continue
            want = keys.Role.PRIMARY if name == primary else keys.Role.REPLICA
            if want != role:
                self._patch(pod, {"metadata": {"labels": {keys.LABEL_ROLE: str(want)}}})

    # --- drains and finalizers -----------------------------------------------------------------
    def step(self) -> list[str]:
        """Advance every drain by one state and release unregistered pods; returns what it did."""
        done = []
        for pod in self._pods():
            name = pod.metadata.name
            ann = pod.metadata.annotations or {}
            state = ann.get(keys.ANN_DRAIN_STATE)
            terminating = pod.metadata.deletion_timestamp is not None
            held = keys.FINALIZER_POD in (pod.metadata.finalizers or [])
            if terminating and held and state in (None, keys.DrainState.READY_FOR_DELETION):
                # strategic merge patch (the client's default for pods): a directive removes one entry
                if self._patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": [keys.FINALIZER_POD]}}):
                    done.append(f"{name}: unregistered, finalizer removed")
                continue
            if state in NEXT_STATE:
                body: dict[str, Any] = {"metadata": {"annotations": {keys.ANN_DRAIN_STATE: NEXT_STATE[state]}}}
                role = (pod.metadata.labels or {}).get(keys.LABEL_ROLE)
                if NEXT_STATE[state] == keys.DrainState.ACKNOWLEDGED and role == keys.Role.PRIMARY:
                    body["metadata"]["labels"] = {keys.LABEL_ROLE: None}
                if NEXT_STATE[state] == keys.DrainState.READY_FOR_DELETION:  # as drain_runner.dns_label
                    body["metadata"]["labels"] = {keys.LABEL_DNS: None}
                if self._patch(pod, body):
                    done.append(f"{name}: {state} -> {NEXT_STATE[state]}")
        return done

    def drain_all(self, limit: int = 10) -> None:
        """Step until no drain can advance (each step is one agent reconcile)."""
        for _ in range(limit):
            if not self.step():
                return

    # --- shard deletion ------------------------------------------------------------------------
    def complete_topology_cleanup(self, name: str) -> bool:
        cr = self.custom.get_namespaced_custom_object(keys.API_GROUP, keys.API_VERSION, self.namespace,
                                                      keys.SHARD_PLURAL, name)
        if (cr["metadata"].get("annotations") or {}).get(keys.ANN_TOPOLOGY_CLEANUP) != keys.TopologyCleanup.REQUESTED:
            return False
        self.custom.patch_namespaced_custom_object(
            keys.API_GROUP, keys.API_VERSION, self.namespace, keys.SHARD_PLURAL, name,
            {"metadata": {"annotations": {keys.ANN_TOPOLOGY_CLEANUP: str(keys.TopologyCleanup.DONE)}}})
        return True


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
