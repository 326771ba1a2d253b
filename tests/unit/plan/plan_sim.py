"""An in-memory stand-in for the API server, kubelet and agent, used to drive the planner through
many passes in property tests. It applies the planner's actions with the same semantics the API
server has for them (resourceVersion/uid preconditions, finalizers holding deletions, merge patch
null-deletes, PVC protection while a pod uses the claim) and plays the agent's documented part:
drains advance requested -> draining -> acknowledged -> ready-for-deletion, the pod finalizer is
removed only once a terminating pod is ready-for-deletion, a drained primary loses its role
(era A: failover after deletion, docs/agent.md).
"""

from __future__ import annotations

import copy
import itertools

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.plan.actions import Action, Verb
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.state.observed import Observed

from tests.helpers.merge_patch import merge_patch

NEXT_STATE = dict(itertools.pairwise(keys.DRAIN_ORDER))


class Sim:
    def __init__(self, cr: Manifest | None = None) -> None:
        self.objects: dict[tuple[str, str], Manifest] = {}
        self.cr = cr
        self._counter = itertools.count(100)
        self.conflicts = 0

    # --- views -------------------------------------------------------------------------------
    def of_kind(self, kind: str) -> list[Manifest]:
        return [copy.deepcopy(o) for (k, _), o in sorted(self.objects.items()) if k == kind]

    def observed(self) -> Observed:
        return Observed(cr=copy.deepcopy(self.cr), pods=tuple(self.of_kind("Pod")),
                        pvcs=tuple(self.of_kind("PersistentVolumeClaim")))

    def pods(self) -> list[Manifest]:
        return [o for (k, _), o in sorted(self.objects.items()) if k == "Pod"]

    def _bump(self, obj: Manifest) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._counter))

    # --- API semantics -------------------------------------------------------------------------
    def execute(self, actions: list[Action]) -> None:
        for action in actions:
            if action.verb is Verb.EVENT:
                continue
            key = (action.kind, action.name)
            live = self.objects.get(key)
            if action.verb is Verb.APPLY:
                self._apply(key, live, action.body or {})
                continue
            if live is None:
                continue  # 404
            md = live["metadata"]
            if (action.uid and md.get("uid") != action.uid) or (
                    action.resource_version and md.get("resourceVersion") != action.resource_version):
                self.conflicts += 1  # 409: stale view, the next pass sees the new state
                continue
            if action.verb is Verb.PATCH:
                self.objects[key] = merge_patch(live, action.body)
                self._bump(self.objects[key])
            elif action.verb is Verb.DELETE:
                self._delete(key, live)
            elif action.verb is Verb.UNFINALIZE:
                self._unfinalize(key, live, (action.body or {})["finalizer"])
        self._collect()

    def _apply(self, key: tuple[str, str], live: Manifest | None, body: Manifest) -> None:
        if live is not None:
            self.objects[key] = merge_patch(live, body)
            self._bump(self.objects[key])
            return
        obj = copy.deepcopy(body)
        obj["metadata"]["uid"] = f"uid-{next(self._counter)}"
        self._bump(obj)
        if obj["kind"] == "Pod":
            obj["status"] = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
        self.objects[key] = obj

    def _delete(self, key: tuple[str, str], live: Manifest) -> None:
        if facts.finalizers(live) or (key[0] == "PersistentVolumeClaim" and self._in_use(live)):
            live["metadata"].setdefault("deletionTimestamp", "2026-05-01T12:00:00Z")
            self._bump(live)
        else:
            del self.objects[key]

    def _unfinalize(self, key: tuple[str, str], live: Manifest, finalizer: str) -> None:
        live["metadata"]["finalizers"] = [f for f in facts.finalizers(live) if f != finalizer]
        self._bump(live)
        if facts.is_terminating(live) and not live["metadata"]["finalizers"]:
            del self.objects[key]

    def _in_use(self, pvc: Manifest) -> bool:
        claim = facts.name(pvc)
        return any(v.get("persistentVolumeClaim", {}).get("claimName") == claim
                   for pod in self.pods() for v in pod.get("spec", {}).get("volumes") or []) or any(
            f"data-{facts.name(pod)}" == claim for pod in self.pods())

    def _collect(self) -> None:
        """PVC protection lets a claim go once no pod uses it."""
        for key, obj in list(self.objects.items()):
            if key[0] == "PersistentVolumeClaim" and facts.is_terminating(obj) and not self._in_use(obj):
                del self.objects[key]

    # --- the kubelet's part ----------------------------------------------------------------------
    def set_ready(self, name: str, ready: bool) -> None:
        pod = self.objects.get(("Pod", name))
        if pod and not facts.is_terminating(pod) and pod["status"].get("phase") not in facts.TERMINAL_PHASES:
            pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}
            self._bump(pod)

    def fail(self, name: str) -> None:
        pod = self.objects.get(("Pod", name))
        if pod and not facts.is_terminating(pod):
            pod["status"] = {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}]}
            self._bump(pod)

    def all_ready(self) -> None:
        for pod in self.pods():
            self.set_ready(facts.name(pod), True)

    def user_delete(self, name: str) -> None:
        pod = self.objects.get(("Pod", name))
        if pod:
            self._delete(("Pod", name), pod)

    # --- the agent's part ------------------------------------------------------------------------
    def set_role(self, name: str, role: str | None) -> None:
        pod = self.objects.get(("Pod", name))
        if pod:
            labels = pod["metadata"].setdefault("labels", {})
            if role:
                labels[keys.LABEL_ROLE] = role
            else:
                labels.pop(keys.LABEL_ROLE, None)
            self._bump(pod)

    def mark_stuck(self, name: str) -> None:
        """The agent's mark: the pod's PostgreSQL stays down (agent/stuck_start.py); it is not Ready."""
        pod = self.objects.get(("Pod", name))
        if pod:
            pod["metadata"].setdefault("annotations", {})[keys.ANN_POSTGRES_STUCK] = "2026-05-01T11:00:00Z"
            self._bump(pod)
            self.set_ready(name, False)

    def elect_primary(self) -> None:
        """Multiorch's part: with no PRIMARY, the lowest Ready non-DRAINED pod becomes one."""
        pods = [p for p in self.pods() if not facts.is_terminating(p)]
        if any(facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY for p in pods):
            return
        for pod in pods:
            role = facts.labels(pod).get(keys.LABEL_ROLE)
            if facts.condition_true(pod, "Ready") and role != keys.Role.DRAINED:
                self.set_role(facts.name(pod), keys.Role.PRIMARY)
                return

    def agent_step(self) -> None:
        for pod in list(self.pods()):
            name, ann = facts.name(pod), facts.annotations(pod)
            state = ann.get(keys.ANN_DRAIN_STATE)
            if state == keys.DrainState.READY_FOR_DELETION and facts.is_terminating(pod):
                self._unfinalize(("Pod", name), pod, keys.FINALIZER_POD)
            elif state in NEXT_STATE:
                ann[keys.ANN_DRAIN_STATE] = str(NEXT_STATE[keys.DrainState(state)])
                self._bump(pod)
            if state == keys.DrainState.DRAINING and facts.labels(pod).get(keys.LABEL_ROLE) == keys.Role.PRIMARY:
                # Era A (docs/agent.md): no switchover API; the primary's record goes at
                # acknowledged, multiorch promotes a replica once the pod is deleted.
                self.set_role(name, None)
            if (facts.labels(pod).get(keys.LABEL_ROLE) is None and facts.condition_true(pod, "Ready")
                    and not facts.annotations(pod).get(keys.ANN_DRAIN_STATE)):
                self.set_role(name, keys.Role.REPLICA)
        self._collect()
