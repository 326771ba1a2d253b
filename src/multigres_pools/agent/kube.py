"""The agent's few Kubernetes calls, returning plain dicts. Writes are merge patches on metadata only,
with a resourceVersion precondition where a stale write could revive a cancelled drain."""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import urllib3
from ansible_collections.multigres.pools.plugins.module_utils import events, facts, keys, labels
from kubernetes import client
from kubernetes.client.rest import ApiException

from . import podinfo

Obj = dict[str, Any]
# Explicit: the client would send strategic merge for dicts, which custom resources do not accept.
MERGE = "application/merge-patch+json"
# Seconds per attempt of one API call (`--kube-timeout`); urllib3 retries an idempotent read that
# timed out up to 3 times, so a read gives up within 4 times this.
DEFAULT_REQUEST_TIMEOUT_S = 10.0


def now_rfc3339(ts: float | None = None) -> str:
    return facts.format_time(datetime.fromtimestamp(ts, UTC) if ts is not None else datetime.now(UTC))


class Conflict(Exception):
    """The object changed since it was read; re-read and decide again."""


class KubeUnavailable(Exception):
    """The API server did not answer within the request timeout or could not be reached: the pass ends
    and the next one retries."""


class Kube:
    def __init__(self, api: client.ApiClient, component: str = "multigres-pools-agent",
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> None:
        self.api = api
        self.request_timeout = request_timeout
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.component = component
        self.host = socket.gethostname()
        # Called with the write's name before every write; the agent's Context makes it refuse
        # writes while the agent does not hold its Lease.
        self.fence: Callable[[str], None] = lambda name: None

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Every API call goes through here: bounded by the request timeout, and a call that times out
        or cannot connect raises KubeUnavailable (ApiException still means the server answered)."""
        try:
            return fn(*args, _request_timeout=self.request_timeout, **kwargs)
        except urllib3.exceptions.HTTPError as exc:
            raise KubeUnavailable(f"Kubernetes API {fn.__name__}: {exc}") from exc

    @staticmethod
    def _json(resp: Any) -> Obj:
        return json.loads(resp.data)

    # --- reads -----------------------------------------------------------------------------------
    def get_pod(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._json(self._call(self.core.read_namespaced_pod, name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list_pool_pods(self, namespace: str, selector: dict[str, str]) -> list[Obj]:
        sel = {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL, **selector}
        resp = self._call(self.core.list_namespaced_pod, namespace, label_selector=labels.selector_string(sel),
                                             _preload_content=False)
        return list(self._json(resp).get("items") or [])

    def get_shard(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._json(self._call(
                self.custom.get_namespaced_custom_object, keys.API_GROUP, keys.API_VERSION, namespace,
                keys.SHARD_PLURAL, name, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # --- writes ----------------------------------------------------------------------------------
    def patch_pod_meta(self, pod: Obj, annotations: dict[str, str | None] | None = None,
                       labels_: dict[str, str | None] | None = None, precondition: bool = False,
                       missing_ok: bool = False) -> Obj | None:
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
            resp = self._call(self.core.patch_namespaced_pod, podinfo.name(pod), podinfo.namespace(pod), body,
                                                  _preload_content=False, _content_type=MERGE,
                                                  field_manager=keys.AGENT_FIELD_MANAGER)
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(f"pod {podinfo.name(pod)} changed") from exc
            if exc.status == 404 and missing_ok:
                return None
            raise
        return self._json(resp)

    def remove_pod_finalizer(self, pod: Obj, finalizer: str) -> None:
        self.fence("remove-finalizer")
        current = list(podinfo.meta(pod).get("finalizers") or [])
        if finalizer not in current:
            return
        # JSON patch with a test op, so a concurrent finalizer change is never overwritten.
        idx = current.index(finalizer)
        patch = [{"op": "test", "path": f"/metadata/finalizers/{idx}", "value": finalizer},
                 {"op": "remove", "path": f"/metadata/finalizers/{idx}"}]
        try:
            self._call(self.core.patch_namespaced_pod, podinfo.name(pod), podinfo.namespace(pod), patch,
                                           field_manager=keys.AGENT_FIELD_MANAGER)
        except ApiException as exc:
            if exc.status in (409, 422, 500):
                raise Conflict(f"pod {podinfo.name(pod)} finalizers changed") from exc
            if exc.status != 404:
                raise

    def set_pod_condition(self, pod: Obj, ctype: str, status: str, reason: str, message: str) -> Obj:
        """Set one pod condition (status subresource); returns the updated pod."""
        self.fence("pod-condition")
        current = (pod.get("status") or {}).get("conditions") or []
        existing = next((c for c in current if c.get("type") == ctype), None)
        if existing and existing.get("status") == status and existing.get("reason") == reason:
            return pod
        conditions = [c for c in current if c.get("type") != ctype]
        conditions.append({"type": ctype, "status": status, "reason": reason, "message": message[:1024],
                           "lastTransitionTime": now_rfc3339()})
        try:
            resp = self._call(self.core.patch_namespaced_pod_status, podinfo.name(pod), podinfo.namespace(pod),
                                                         {"status": {"conditions": conditions}},
                                                         _content_type=MERGE, _preload_content=False,
                                                         field_manager=keys.AGENT_FIELD_MANAGER)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return pod
        return self._json(resp)

    def patch_shard_annotations(self, shard: Obj, annotations: dict[str, str | None]) -> None:
        self.fence("patch-shard")
        self._call(
            self.custom.patch_namespaced_custom_object, keys.API_GROUP, keys.API_VERSION,
            podinfo.namespace(shard), keys.SHARD_PLURAL, podinfo.name(shard),
            {"metadata": {"annotations": annotations}}, _content_type=MERGE,
            field_manager=keys.AGENT_FIELD_MANAGER)

    def event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        """Best effort: an event that cannot be written must never stop a drain step."""
        self.fence("event")
        meta = podinfo.meta(obj)
        involved = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Pod"),
                    "name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                    "resourceVersion": meta.get("resourceVersion")}
        body = events.event_manifest(involved, "Warning" if warning else "Normal", reason, message,
                                     component=self.component, instance=f"{self.host}-{uuid.uuid4().hex[:6]}",
                                     stamp=now_rfc3339(), host=self.host)
        with contextlib.suppress(ApiException, KubeUnavailable):  # best effort, see above
            self._call(self.core.create_namespaced_event, meta.get("namespace"), body)
