"""TEST HELPER — plays the kubelet, the volume binder and the deployment controller, which do not run
in the harness.

It only writes what those components write, through the same status subresources: pod phase and
the PodScheduled/Initialized/ContainersReady/Ready conditions plus container statuses, PVC phase and
capacity, the FileSystemResizePending condition a CSI resizer leaves behind, and Deployment replica
counts. The status writers here are shared with `process_kubelet.py`, which really runs the pods.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube import events
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from kubernetes import client


def now() -> str:
    return facts.format_time(dt.datetime.now(dt.UTC))


def pod_conditions(values: Mapping[str, bool], previous: list[Manifest] | None = None) -> list[Manifest]:
    """Pod conditions in the given order; a condition whose status did not change keeps its
    lastTransitionTime from `previous`, as the kubelet does."""
    before = {c.get("type"): c for c in previous or []}
    stamp = now()
    out = []
    for kind, value in values.items():
        status = "True" if value else "False"
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else None
        out.append({"type": kind, "status": status, "lastTransitionTime": since or stamp})
    return out


def _conditions(ready: bool) -> list[Manifest]:
    return pod_conditions({"PodScheduled": True, "Initialized": True, "ContainersReady": ready, "Ready": ready})


def record_event(core: client.CoreV1Api, involved: Mapping[str, Any], event_type: str, reason: str,
                 message: str, *, host: str | None = None) -> None:
    """A core/v1 Event from the kubelet about `involved` (a pod or a node reference)."""
    body = events.event_manifest(involved, event_type, reason, message, component="kubelet",
                                 instance=host or "kubelet", stamp=now(), host=host)
    # The client serializes a plain manifest as well as its model classes.
    core.create_namespaced_event(body["metadata"]["namespace"] or "default", body)  # type: ignore[arg-type]  # a dict


def _container_statuses(containers: list[Any], ready: bool, running: bool) -> list[dict[str, Any]]:
    state = ({"running": {"startedAt": now()}} if running
             else {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": now()}})
    return [{"name": c.name, "image": c.image, "imageID": "", "ready": ready, "restartCount": 0,
             "started": running, "state": state} for c in containers]


class FakeKubelet:
    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)

    def _set_pod_status(self, namespace: str, name: str, phase: str, ready: bool) -> None:
        pod = self.core.read_namespaced_pod(name, namespace)
        assert pod.spec is not None  # the API server always returns a pod's spec
        running = phase == "Running"
        status = {
            "phase": phase,
            "conditions": _conditions(ready),
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "hostIP": "127.0.0.1",
            "startTime": now(),
            "initContainerStatuses": _container_statuses(pod.spec.init_containers or [], ready, running),
            "containerStatuses": _container_statuses(pod.spec.containers, ready, running),
        }
        self.write_pod_status(namespace, name, status)

    def write_pod_status(self, namespace: str, name: str, status: Manifest) -> None:
        """A strategic-merge patch of the status subresource: conditions merge by type, so conditions
        other components own (DisruptionTarget, readiness gates) survive."""
        self.core.patch_namespaced_pod_status(name, namespace, {"status": status})

    def mark_ready(self, namespace: str, name: str) -> None:
        self._set_pod_status(namespace, name, "Running", ready=True)

    def mark_not_ready(self, namespace: str, name: str) -> None:
        self._set_pod_status(namespace, name, "Running", ready=False)

    def mark_failed(self, namespace: str, name: str) -> None:
        self._set_pod_status(namespace, name, "Failed", ready=False)

    def mark_all_ready(self, namespace: str, label_selector: str = "") -> list[str]:
        """Mark every live (not terminating) pod Ready; returns the names it touched."""
        touched = []
        for pod in self.core.list_namespaced_pod(namespace, label_selector=label_selector).items:
            meta = _meta(pod.metadata)
            if meta.deletion_timestamp is None and not _is_ready(pod):
                self.mark_ready(namespace, _name(meta))
                touched.append(_name(meta))
        return touched

    def mark_deployments_available(self, namespace: str, label_selector: str = "") -> list[str]:
        """What the deployment controller and the kubelet report once a Deployment's pods run (neither
        runs here): every replica ready, at the current generation. Returns the names it touched."""
        apps = client.AppsV1Api(self.core.api_client)
        touched = []
        for dep in apps.list_namespaced_deployment(namespace, label_selector=label_selector).items:
            assert dep.spec is not None and dep.status is not None  # the API server fills both
            want = dep.spec.replicas if dep.spec.replicas is not None else 1
            status, generation = dep.status, _meta(dep.metadata).generation
            if status.ready_replicas == want and status.observed_generation == generation:
                continue
            apps.patch_namespaced_deployment_status(_name(dep.metadata), namespace, {"status": {
                "observedGeneration": generation, "replicas": want, "readyReplicas": want,
                "availableReplicas": want, "updatedReplicas": want}})
            touched.append(_name(dep.metadata))
        return touched

    def bind_pvc(self, namespace: str, name: str) -> None:
        pvc = self.core.read_namespaced_persistent_volume_claim(name, namespace)
        # Our claims always request storage (the API server rejects one without).
        assert pvc.spec is not None and pvc.spec.resources is not None and pvc.spec.resources.requests is not None
        size = pvc.spec.resources.requests["storage"]
        self.core.patch_namespaced_persistent_volume_claim_status(
            name, namespace,
            {"status": {"phase": "Bound", "accessModes": pvc.spec.access_modes, "capacity": {"storage": size}}})

    def bind_all_pvcs(self, namespace: str) -> list[str]:
        bound = []
        for pvc in self.core.list_namespaced_persistent_volume_claim(namespace).items:
            assert pvc.status is not None  # the API server fills it (phase Pending at creation)
            if (pvc.status.phase or "Pending") != "Bound" and _meta(pvc.metadata).deletion_timestamp is None:
                self.bind_pvc(namespace, _name(pvc.metadata))
                bound.append(_name(pvc.metadata))
        return bound

    def resize_pending(self, namespace: str, pvc_name: str) -> None:
        """What the external resizer leaves when the filesystem grows only on the next pod start."""
        self.core.patch_namespaced_persistent_volume_claim_status(pvc_name, namespace, {"status": {
            "conditions": [{"type": "FileSystemResizePending", "status": "True", "lastTransitionTime": now(),
                            "message": "Waiting for user to (re-)start a pod to finish file system resize"}]}})


def _is_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in ((pod.status and pod.status.conditions) or []))


def _meta(meta: client.V1ObjectMeta | None) -> client.V1ObjectMeta:
    """An object the API server returned always has its metadata; the client types it optional."""
    assert meta is not None
    return meta


def _name(meta: client.V1ObjectMeta | None) -> str:
    name = _meta(meta).name
    assert name is not None
    return name
