"""The install bundle: CRD, least-privilege RBAC (every verb justified), operator and agent Deployments
and their metrics Services; the optional monitoring/ folder (monitoring.py) needs the Prometheus Operator.

RBAC files carry a YAML comment above each rule saying why the verb is needed; `files()` returns
{file name: text} ready to write, byte-stable like every other rendered folder.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from . import keys, layout, monitoring, output
from .crd import shard_crd
from .desired import Manifest

NAMESPACE = keys.INSTALL_NAMESPACE
OPERATOR = keys.OPERATOR_COMPONENT
AGENT = keys.AGENT_COMPONENT
DEFAULT_IMAGE = "ghcr.io/multigres/pools:0.1.0"
_UID = 65532  # a fixed non-root uid, so runAsNonRoot is verifiable whatever the image's USER


@dataclass(frozen=True)
class Grant:
    why: str
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def rule(self) -> Manifest:
        return {"apiGroups": list(self.groups), "resources": list(self.resources), "verbs": list(self.verbs)}


_CHILD_VERBS = ("create", "get", "list", "watch", "patch", "delete")
_SHARDS = (keys.SHARD_PLURAL,)
_OUR_GROUP = (keys.API_GROUP,)

OPERATOR_CLUSTER_GRANTS = (
    Grant("Watch MultigresShards to reconcile them; patch adds and removes the shard-cleanup finalizer and "
          "the topology-cleanup annotations; update is the fallback for finalizer edits on old servers.",
          _OUR_GROUP, _SHARDS, ("get", "list", "watch", "patch", "update")),
    Grant("Write status (observedGeneration, conditions, pod roles) through the status subresource only.",
          _OUR_GROUP, (f"{keys.SHARD_PLURAL}/status",), ("get", "patch", "update")),
    Grant("Children carry ownerReferences with blockOwnerDeletion to their MultigresShard; the "
          "OwnerReferencesPermissionEnforcement admission plugin requires update on the owner's finalizers.",
          _OUR_GROUP, (f"{keys.SHARD_PLURAL}/finalizers",), ("update",)),
    Grant("Pool pods, data and backup PVCs, headless/MultiOrch Services and config ConfigMaps: created, "
          "watched, patched (labels, drain annotations, PVC growth, ownerReferences) and deleted after a drain.",
          ("",), ("pods", "persistentvolumeclaims", "services", "configmaps"), _CHILD_VERBS),
    Grant("One PodDisruptionBudget per pool and cell, updated when replicasPerCell changes.",
          ("policy",), ("poddisruptionbudgets",), _CHILD_VERBS),
    Grant("One MultiOrch Deployment per cell.", ("apps",), ("deployments",), _CHILD_VERBS),
    Grant("One NetworkPolicy per shard (security.networkPolicy), admitting only the traffic the pool needs.",
          ("networking.k8s.io",), ("networkpolicies",), _CHILD_VERBS),
    Grant("The pgBackRest Certificate when backup.pgbackrestTLS.mode is certManager (unused otherwise).",
          ("cert-manager.io",), ("certificates",), _CHILD_VERBS),
    Grant("pgbackrestTLS.mode auto: list and watch (metadata only, the operator's cache) find the shard's "
          "generated TLS Secrets, create makes the CA Secret once, patch (re-)issues the certificate Secret, get "
          "reads the CA key to sign it. The engine never reports Secret data and never deletes a Secret it did "
          "not generate.",
          ("",), ("secrets",), ("get", "list", "watch", "create", "patch")),
    Grant("Report what happened (DrainStarted, PodCreated, ...) as Events on the MultigresShard; patch "
          "lets the client aggregate repeats.", ("", "events.k8s.io"), ("events",), ("create", "patch")),
)

AGENT_CLUSTER_GRANTS = (
    Grant("Watch pool pods; patch publishes the role label, walks the drain annotations and removes the "
          "pooler-unregister finalizer once the pooler is unregistered.",
          ("",), ("pods",), ("get", "list", "watch", "patch")),
    Grant("Set the DrainStalled pod condition when a drain step is stuck past the threshold.",
          ("",), ("pods/status",), ("patch",)),
    Grant("Read each shard's topology address; patch writes the backup-health and topology-cleanup "
          "annotations.", _OUR_GROUP, _SHARDS, ("get", "list", "watch", "patch")),
    Grant("Report drain and backup progress as Events.", ("", "events.k8s.io"), ("events",), ("create",)),
)

LEASE_GRANT = Grant(
    "Leader election: one active replica at a time, through a Lease in the install namespace only.",
    ("coordination.k8s.io",), ("leases",), ("get", "create", "update"),
)


def _labels(component: str) -> dict[str, str]:
    return {keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME, keys.LABEL_APP_COMPONENT: component,
            keys.LABEL_APP_PART_OF: keys.PART_OF}


def _rbac_text(kind: str, name: str, grants: tuple[Grant, ...], namespace: str | None = None) -> str:
    meta: dict[str, Any] = {"name": name, "labels": _labels(name)}
    if namespace:
        meta["namespace"] = namespace
    head = output.dump({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta})
    body = "".join(
        "".join(f"# {line}\n" for line in textwrap.wrap(grant.why, 100)) + output.dump([grant.rule()])
        for grant in grants
    )
    return f"{head}rules:\n{body}"


def _binding(kind: str, name: str, namespace: str | None = None) -> Manifest:
    role_kind = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
    meta: dict[str, Any] = {"name": name, "labels": _labels(name)}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
    }


def _env_from_field(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _probe(path: str) -> Manifest:
    return {"httpGet": {"path": path, "port": "http"}, "periodSeconds": 10}


def _deployment(name: str, image: str, command: str, extra_args: tuple[str, ...]) -> Manifest:
    selector = {keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME, keys.LABEL_APP_COMPONENT: name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": _labels(name)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": _labels(name)},
                "spec": {
                    "serviceAccountName": name,
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True, "runAsUser": _UID, "runAsGroup": _UID, "fsGroup": _UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": command,
                        "image": image,
                        "command": ["multigres-pools"],
                        "args": [command, *extra_args],
                        # The Lease lives in POD_NAMESPACE; POD_NAME is the leader identity.
                        "env": [_env_from_field("POD_NAMESPACE", "metadata.namespace"),
                                _env_from_field("POD_NAME", "metadata.name")],
                        "ports": [{"name": "http", "containerPort": layout.INSTALL_HTTP, "protocol": "TCP"}],
                        "livenessProbe": _probe("/healthz"),
                        "readinessProbe": _probe("/readyz"),
                        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                        "securityContext": {
                            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    # ansible-runner and Python need a writable /tmp; the root filesystem stays read-only.
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def _metrics_service(name: str) -> Manifest:
    """Scraped by the ServiceMonitor (label) or by annotation-based discovery (prometheus.io/*)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-metrics", "namespace": NAMESPACE,
                     "labels": {**_labels(name), keys.LABEL_METRICS: "true"},
                     "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(layout.INSTALL_HTTP),
                                     "prometheus.io/path": "/metrics"}},
        "spec": {
            "type": "ClusterIP",
            "selector": {keys.LABEL_APP_NAME: keys.INSTALL_APP_NAME, keys.LABEL_APP_COMPONENT: name},
            "ports": [{"name": keys.METRICS_PORT_NAME, "port": layout.INSTALL_HTTP, "targetPort": "http",
                       "protocol": "TCP"}],
        },
    }


def files(image: str = DEFAULT_IMAGE) -> dict[str, str]:
    """{file name: text} of the whole bundle, kustomization.yaml included."""
    objects: dict[str, Manifest] = {
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": NAMESPACE, "labels": {
                               **_labels("install"), "pod-security.kubernetes.io/enforce": "restricted"}}},
        "crd.yaml": shard_crd(),
    }
    texts: dict[str, str] = {}
    order = ["namespace.yaml", "crd.yaml"]
    for name, command, grants, args in ((OPERATOR, "operator", OPERATOR_CLUSTER_GRANTS, ("--all-namespaces",)),
                                        (AGENT, "agent", AGENT_CLUSTER_GRANTS, ())):
        objects[f"{command}-serviceaccount.yaml"] = {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": _labels(name)},
        }
        texts[f"{command}-clusterrole.yaml"] = _rbac_text("ClusterRole", name, grants)
        objects[f"{command}-clusterrolebinding.yaml"] = _binding("ClusterRoleBinding", name)
        texts[f"{command}-role.yaml"] = _rbac_text("Role", name, (LEASE_GRANT,), NAMESPACE)
        objects[f"{command}-rolebinding.yaml"] = _binding("RoleBinding", name, NAMESPACE)
        objects[f"{command}-deployment.yaml"] = _deployment(name, image, command, args)
        objects[f"{command}-metrics-service.yaml"] = _metrics_service(name)
        order += [f"{command}-{part}.yaml" for part in (
            "serviceaccount", "clusterrole", "clusterrolebinding", "role", "rolebinding", "deployment",
            "metrics-service")]
    texts.update({path: output.dump(obj) for path, obj in objects.items()})
    if sorted(order) != sorted(texts):
        raise AssertionError("every bundle file is listed once in the kustomization")
    texts["kustomization.yaml"] = output.dump(output.kustomization(order))
    texts.update(monitoring.files())  # its own kustomization: apply it only where the CRDs exist
    return dict(sorted(texts.items()))
