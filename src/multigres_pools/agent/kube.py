"""The agent's few Kubernetes calls, returning plain dicts. Writes are merge patches on metadata only,
with a resourceVersion precondition where a stale write could revive a cancelled drain. They go
through the engine's KubeClient, the one client of the agent and the operator (the informers only watch)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, overload

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube import events
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, KubeError, resource_path
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from . import podinfo

T = TypeVar("T")
# Seconds per API call (`--kube-timeout`): the client's socket timeout, one attempt per call.
DEFAULT_REQUEST_TIMEOUT_S = 10.0


def now_rfc3339(ts: float | None = None) -> str:
    return facts.format_time(datetime.fromtimestamp(ts, UTC) if ts is not None else datetime.now(UTC))


class Conflict(Exception):
    """The object changed since it was read; re-read and decide again."""


class KubeUnavailable(Exception):
    """The API server did not answer within the request timeout or could not be reached: the pass ends
    and the next one retries."""


class Kube:
    def __init__(self, client: KubeClient, component: str = "multigres-pools-agent") -> None:
        self.client = client
        self.component = component
        self.host = socket.gethostname()
        # Called with the write's name before every write; the agent's Context makes it refuse
        # writes while the agent does not hold its Lease.
        self.fence: Callable[[str], None] = lambda name: None

    @property
    def request_timeout(self) -> float:
        return self.client.timeout

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Every API call goes through here: a call that times out or cannot connect raises
        KubeUnavailable (KubeError still means the server answered)."""
        try:
            return fn(*args, **kwargs)
        except (OSError, http.client.HTTPException) as exc:
            self.client.close()  # a half-read answer must not be taken for the next call's
            raise KubeUnavailable(f"Kubernetes API {what}: {exc or type(exc).__name__}") from exc

    # --- reads -----------------------------------------------------------------------------------
    def get_pod(self, namespace: str, name: str) -> Manifest | None:
        return self._call("get pod", self.client.get, "v1", "Pod", namespace, name)

    def list_pool_pods(self, namespace: str, selector: dict[str, str]) -> list[Manifest]:
        sel = {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL, **selector}
        return self._call("list pods", self.client.list, "v1", "Pod", namespace, labels.selector_string(sel))

    def get_shard(self, namespace: str, name: str) -> Manifest | None:
        return self._call("get shard", self.client.get, keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name)

    # --- writes ----------------------------------------------------------------------------------
    def _patch(self, what: str, obj: Manifest, body: Manifest, subresource: str | None = None) -> Manifest:
        return self._call(what, self.client.merge_patch, obj.get("apiVersion", "v1"), obj.get("kind", "Pod"),
                          podinfo.namespace(obj), podinfo.name(obj), body, field_manager=keys.AGENT_FIELD_MANAGER,
                          subresource=subresource)

    @overload
    def patch_pod_meta(self, pod: Manifest, annotations: dict[str, str | None] | None = ...,
                       labels_: dict[str, str | None] | None = ..., precondition: bool = ...,
                       missing_ok: Literal[False] = ...) -> Manifest: ...

    @overload
    def patch_pod_meta(self, pod: Manifest, annotations: dict[str, str | None] | None = ...,
                       labels_: dict[str, str | None] | None = ..., precondition: bool = ...,
                       *, missing_ok: bool) -> Manifest | None: ...

    def patch_pod_meta(self, pod: Manifest, annotations: dict[str, str | None] | None = None,
                       labels_: dict[str, str | None] | None = None, precondition: bool = False,
                       missing_ok: bool = False) -> Manifest | None:
        """Merge-patch labels/annotations; Conflict on a moved resourceVersion (with `precondition`);
        None instead of an error when the pod is gone and `missing_ok`."""
        self.fence("patch-pod")
        body: dict[str, Any] = {"metadata": {}}
        if annotations:
            body["metadata"]["annotations"] = annotations
        if labels_:
            body["metadata"]["labels"] = labels_
        if precondition:
            body["metadata"]["resourceVersion"] = podinfo.meta(pod).get("resourceVersion")
        try:
            return self._patch("patch pod", {**pod, "apiVersion": "v1", "kind": "Pod"}, body)
        except KubeError as exc:
            if exc.status == 409:
                raise Conflict(f"pod {podinfo.name(pod)} changed") from exc
            if exc.status == 404 and missing_ok:
                return None
            raise

    def remove_pod_finalizer(self, pod: Manifest, finalizer: str) -> None:
        self.fence("remove-finalizer")
        current = list(podinfo.meta(pod).get("finalizers") or [])
        if finalizer not in current:
            return
        # JSON patch with a test op, so a concurrent finalizer change is never overwritten.
        idx = current.index(finalizer)
        patch = [{"op": "test", "path": f"/metadata/finalizers/{idx}", "value": finalizer},
                 {"op": "remove", "path": f"/metadata/finalizers/{idx}"}]
        try:
            self._call("remove finalizer", self.client.json_patch, "v1", "Pod", podinfo.namespace(pod),
                       podinfo.name(pod), patch, field_manager=keys.AGENT_FIELD_MANAGER)
        except KubeError as exc:
            if exc.status in (409, 422, 500):
                raise Conflict(f"pod {podinfo.name(pod)} finalizers changed") from exc
            if exc.status != 404:
                raise

    def set_pod_condition(self, pod: Manifest, ctype: str, status: str, reason: str, message: str) -> Manifest:
        """Set one pod condition (status subresource); returns the updated pod."""
        self.fence("pod-condition")
        current = (pod.get("status") or {}).get("conditions") or []
        existing = next((c for c in current if c.get("type") == ctype), None)
        if existing and existing.get("status") == status and existing.get("reason") == reason:
            return pod
        # The transition is the status's: a new reason or message under the same status keeps its time.
        since = existing.get("lastTransitionTime") if existing and existing.get("status") == status else None
        condition = {"type": ctype, "status": status, "reason": reason, "message": message[:1024],
                     "lastTransitionTime": since or now_rfc3339()}
        # A strategic merge patch merges by condition type: the kubelet's Ready/ContainersReady stay as
        # the server has them. (A merge patch would replace the whole list with our copy, and a stale
        # copy, read before the kubelet marked the pod Ready again, would leave it not Ready for good.)
        path = resource_path("v1", "Pod", podinfo.namespace(pod), podinfo.name(pod), "status")
        try:
            return self._call("pod condition", self.client.request, "patch", "PATCH", path,
                              query={"fieldManager": keys.AGENT_FIELD_MANAGER},
                              body={"status": {"conditions": [condition]}},
                              content_type="application/strategic-merge-patch+json")
        except KubeError as exc:
            if exc.status != 404:
                raise
            return pod

    def patch_shard_annotations(self, shard: Manifest, annotations: dict[str, str | None]) -> None:
        self.fence("patch-shard")
        self._patch("patch shard", {**shard, "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND},
                    {"metadata": {"annotations": annotations}})

    def event(self, obj: Manifest, reason: str, message: str, warning: bool = False) -> None:
        """Best effort: an event that cannot be written must never stop a drain step."""
        self.fence("event")
        meta = podinfo.meta(obj)
        involved = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Pod"),
                    "name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                    "resourceVersion": meta.get("resourceVersion")}
        body = events.event_manifest(involved, "Warning" if warning else "Normal", reason, message,
                                     component=self.component, instance=f"{self.host}-{uuid.uuid4().hex[:6]}",
                                     stamp=now_rfc3339(), host=self.host)
        with contextlib.suppress(KubeError, KubeUnavailable):  # best effort, see above
            self._call("create event", self.client.create, body, field_manager=keys.AGENT_FIELD_MANAGER)
