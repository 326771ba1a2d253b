"""The install bundle: CRD, least-privilege RBAC (every verb justified), operator and agent Deployments
and their metrics Services; the optional monitoring/ folder (monitoring.py) needs the Prometheus Operator.

Namespaced by default: a Role and RoleBinding per watched namespace, so neither ServiceAccount can
touch anything outside the namespaces it is given; `cluster_wide=True` grants the same rules
through ClusterRoles instead. RBAC files carry a YAML comment above each rule saying why the verb
is needed, and `permissions_table()` renders the same grants as the table in docs/install.md (the
one source both the manifests and the docs come from). `files()` returns {file name: text} ready
to write, byte-stable like every other rendered folder.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.requirements_guard import runtime_requirements
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ansible_collections.multigres.pools.plugins.module_utils.render import output

    from . import monitoring
    from .crd import shard_crd

NAMESPACE = keys.INSTALL_NAMESPACE
OPERATOR = keys.OPERATOR_COMPONENT
AGENT = keys.AGENT_COMPONENT
DEFAULT_IMAGE = keys.POOLS_IMAGE
# Watched when nothing else is asked for: a namespace every cluster has, so the bundle applies as is.
DEFAULT_WATCH_NAMESPACES = ("default",)
_UID = 65532  # a fixed non-root uid, so runAsNonRoot is verifiable whatever the image's USER
# Where a grant applies, as docs/install.md's table says it.
WATCHED, INSTALL, CLUSTER = "watched namespaces", "install namespace", "cluster (no namespace)"


def service_account(name: str) -> str:
    """The username the API server gives the bundle's ServiceAccount `name`."""
    return f"system:serviceaccount:{NAMESPACE}:{name}"


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

OPERATOR_GRANTS = (
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
          "generated TLS Secrets, create makes the CA Secret once, patch (re-)issues the certificate Secret and "
          "rotates the CA before expiry, get reads the CA key to sign it. The engine never reports Secret data "
          "and never deletes a Secret: the generated ones are owned by the shard, and the garbage collector "
          "removes them with it.",
          ("",), ("secrets",), ("get", "list", "watch", "create", "patch")),
    # No delete on Secrets: reconcile.decide does not list them while a shard is deleted.
    Grant("Report what happened (DrainStarted, PodCreated, ...) as Events on the MultigresShard; patch "
          "lets the client aggregate repeats.", ("", "events.k8s.io"), ("events",), ("create", "patch")),
)

AGENT_GRANTS = (
    Grant("Watch pool pods; patch publishes the role label, walks the drain annotations and removes the "
          "pooler-unregister finalizer once the pooler is unregistered. Admission (agent-pod-policy.yaml) refuses "
          "its writes to any pod that is not a pool pod.",
          ("",), ("pods",), ("get", "list", "watch", "patch")),
    Grant("Set the DrainStalled pod condition when a drain step is stuck past the threshold.",
          ("",), ("pods/status",), ("patch",)),
    Grant("Read each shard's topology address; patch writes the backup-health, topology-health and "
          "topology-cleanup annotations.", _OUR_GROUP, _SHARDS, ("get", "list", "watch", "patch")),
    Grant("Report drain and backup progress as Events.", ("", "events.k8s.io"), ("events",), ("create",)),
)

# Cluster-scoped by nature (the review APIs have no namespace), so a ClusterRole even in a namespaced install.
METRICS_AUTH_GRANTS = (
    Grant("--metrics-auth kubernetes: authenticate the bearer token of a /metrics request (TokenReview).",
          ("authentication.k8s.io",), ("tokenreviews",), ("create",)),
    Grant("--metrics-auth kubernetes: ask whether the token's user may get the non-resource URL /metrics "
          "(SubjectAccessReview). Neither review reads or changes any object.",
          ("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
)

# Nodes have no namespace: a ClusterRole even in a namespaced install.
OPERATOR_NODE_GRANTS = (
    Grant("Node maintenance: see which nodes are cordoned (spec.unschedulable), so the pool pods on them "
          "leave through a drain, the primary last, instead of being evicted. Read only.",
          ("",), ("nodes",), ("get", "list", "watch")),
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


def _serving_args(command: str) -> tuple[str, ...]:
    """The pod's address, because the kubelet probes it and Prometheus scrapes it; /metrics only for
    tokens allowed to read it (metrics_access.py)."""
    flag = "--health-addr" if command == "operator" else "--http"
    return (f"{flag}=0.0.0.0:{layout.INSTALL_HTTP}", "--metrics-auth=kubernetes")


def metrics_rbac() -> tuple[str, Manifest, Manifest]:
    """The token-review ClusterRole (text, commented) and its binding to both ServiceAccounts, and the
    ClusterRole a scraper is bound to."""
    role = _rbac_text("ClusterRole", keys.METRICS_AUTH_ROLE, METRICS_AUTH_GRANTS)
    binding = _binding("ClusterRoleBinding", keys.METRICS_AUTH_ROLE)
    binding["subjects"] = [{"kind": "ServiceAccount", "name": n, "namespace": NAMESPACE} for n in (OPERATOR, AGENT)]
    reader = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
              "metadata": {"name": keys.METRICS_READER_ROLE, "labels": _labels(keys.METRICS_READER_ROLE)},
              "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    return role, binding, reader


def agent_grpc_tls(secret: str | None) -> tuple[tuple[str, ...], list[Manifest], list[Manifest]]:
    """(args, volumes, mounts) giving the agent a client certificate for multipooler's gRPC from
    `secret` (in the install namespace: tls.crt, tls.key, ca.crt, the shards' spec.security.grpcTLS CA)."""
    if not secret:
        return (), [], []
    files = {"--grpc-cert": layout.GRPC_TLS_CERT, "--grpc-key": layout.GRPC_TLS_KEY, "--grpc-ca": layout.GRPC_TLS_CA}
    args = tuple(f"{flag}={layout.GRPC_TLS_DIR}/{name}" for flag, name in files.items())
    volume = {"name": layout.VOL_GRPC_TLS, "secret": {"secretName": secret, "defaultMode": 0o440}}
    return args, [volume], [{"name": layout.VOL_GRPC_TLS, "mountPath": layout.GRPC_TLS_DIR, "readOnly": True}]


def _deployment(name: str, image: str, command: str, extra_args: tuple[str, ...],
                volumes: tuple[list[Manifest], list[Manifest]] = ([], [])) -> Manifest:
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
                        "args": [command, *_serving_args(command), *extra_args],
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
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, *volumes[1]],
                    }],
                    # ansible-runner and Python need a writable /tmp; the root filesystem stays read-only.
                    "volumes": [{"name": "tmp", "emptyDir": {}}, *volumes[0]],
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


# The agent may change only pool pods: RBAC cannot select objects by label, admission can.
AGENT_POD_POLICY = keys.AGENT_POD_POLICY
AGENT_POD_POLICY_MESSAGE = (f"{AGENT} may change only pool pods (label "
                            f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}, kept as it was)")


def _is_pool_pod(var: str) -> str:
    return (f"has({var}.metadata.labels) && '{keys.LABEL_APP_COMPONENT}' in {var}.metadata.labels && "
            f"{var}.metadata.labels['{keys.LABEL_APP_COMPONENT}'] == '{keys.COMPONENT_POOL}'")


def agent_pod_policy() -> tuple[Manifest, Manifest]:
    """A ValidatingAdmissionPolicy and its binding: the agent's pod writes (patch is an UPDATE) are
    refused unless the pod was a pool pod and stays one."""
    meta = {"name": AGENT_POD_POLICY, "labels": _labels(AGENT)}
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": meta,
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["pods", "pods/status"]}]},
            "matchConditions": [{"name": "the-agent-only",
                                 "expression": f"request.userInfo.username == '{service_account(AGENT)}'"}],
            "validations": [{"expression": f"{_is_pool_pod('oldObject')} && {_is_pool_pod('object')}",
                             "message": AGENT_POD_POLICY_MESSAGE, "reason": "Forbidden"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": meta,
        "spec": {"policyName": AGENT_POD_POLICY, "validationActions": ["Deny"]},
    }
    return policy, binding


@dataclass(frozen=True)
class Permission:
    """One row of docs/install.md's permission table."""

    account: str
    where: str
    grant: Grant


def permissions() -> list[Permission]:
    """Every grant of the bundle, whatever its scope: the shard grants apply in each watched
    namespace (or cluster-wide), the Lease grant in the install namespace."""
    rows = []
    for account, grants in ((OPERATOR, OPERATOR_GRANTS), (AGENT, AGENT_GRANTS)):
        rows += [Permission(account, WATCHED, grant) for grant in grants]
        rows.append(Permission(account, INSTALL, LEASE_GRANT))
        rows += [Permission(account, CLUSTER, grant) for grant in METRICS_AUTH_GRANTS]
        if account == OPERATOR:
            rows += [Permission(account, CLUSTER, grant) for grant in OPERATOR_NODE_GRANTS]
    return rows


TABLE_HEADER = ("| ServiceAccount | Where | API groups | Resources | Verbs | Why |\n"
                "|---|---|---|---|---|---|\n")


def permissions_table() -> str:
    """docs/install.md's table, written from the grants (`core` is the empty API group)."""
    def cell(values: tuple[str, ...]) -> str:
        return ", ".join(f"`{v or 'core'}`" for v in values)
    return TABLE_HEADER + "".join(
        f"| `{p.account}` | {p.where} | {cell(p.grant.groups)} | {cell(p.grant.resources)} | "
        f"{cell(p.grant.verbs)} | {p.grant.why} |\n" for p in permissions())


def parse_permissions_table(text: str) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """(account, where, groups, resources, verbs) of each row of the table in `text` (a document
    holding `permissions_table()`), for checking the docs against a live cluster."""
    def values(cell: str) -> tuple[str, ...]:
        return tuple("" if v == "core" else v for v in (part.strip().strip("`") for part in cell.split(",")))
    start = text.index(TABLE_HEADER) + len(TABLE_HEADER)
    rows = []
    for line in text[start:].splitlines():
        if not line.startswith("| `"):
            break
        account, where, groups, resources, verbs = (c.strip() for c in line.split("|")[1:6])
        rows.append((account.strip("`"), where, values(groups), values(resources), values(verbs)))
    return rows


def _rbac_files(command: str, name: str, grants: tuple[Grant, ...], namespaces: tuple[str, ...],
                cluster_wide: bool) -> tuple[dict[str, str], dict[str, Manifest]]:
    """{file: text} of the Roles/ClusterRoles (commented) and {file: object} of their bindings."""
    texts: dict[str, str] = {}
    objects: dict[str, Manifest] = {}
    lease_with_shards = not cluster_wide and NAMESPACE in namespaces
    if cluster_wide:
        texts[f"{command}-clusterrole.yaml"] = _rbac_text("ClusterRole", name, grants)
        objects[f"{command}-clusterrolebinding.yaml"] = _binding("ClusterRoleBinding", name)
    for ns in () if cluster_wide else namespaces:
        extra = (LEASE_GRANT,) if ns == NAMESPACE else ()
        texts[f"{command}-role-{ns}.yaml"] = _rbac_text("Role", name, grants + extra, ns)
        objects[f"{command}-rolebinding-{ns}.yaml"] = _binding("RoleBinding", name, ns)
    if not lease_with_shards:
        texts[f"{command}-role.yaml"] = _rbac_text("Role", name, (LEASE_GRANT,), NAMESPACE)
        objects[f"{command}-rolebinding.yaml"] = _binding("RoleBinding", name, NAMESPACE)
    return texts, objects


def policy_args(policy: SpecPolicy | None) -> tuple[str, ...]:
    """The operator's --allowed-* arguments for the non-empty allow-lists of `policy`."""
    if policy is None:
        return ()
    lists = (("--allowed-images", policy.images), ("--allowed-service-accounts", policy.service_accounts),
             ("--allowed-secrets", policy.secrets))
    return tuple(f"{flag}={','.join(values)}" for flag, values in lists if values)


def files(image: str = DEFAULT_IMAGE, namespaces: tuple[str, ...] = DEFAULT_WATCH_NAMESPACES, *,
          cluster_wide: bool = False, policy: SpecPolicy | None = None,
          agent_grpc_tls_secret: str | None = None) -> dict[str, str]:
    """{file name: text} of the whole bundle, kustomization.yaml included.

    `namespaces` are the namespaces the operator and the agent watch (a Role and RoleBinding each);
    `cluster_wide` watches all of them through ClusterRoles instead (`namespaces` is then ignored).
    `policy`: the operator's allow-lists for images, ServiceAccounts and Secrets (spec_policy.py).
    `agent_grpc_tls_secret`: a Secret in the install namespace the agent dials multipoolers with
    (shards with spec.security.grpcTLS; docs/operations.md, "TLS for gRPC")."""
    if not cluster_wide and not namespaces:
        raise ValueError("namespaces: give at least one namespace to watch, or cluster_wide")
    watched = () if cluster_wide else tuple(sorted(set(namespaces)))
    scope_args = ("--all-namespaces",) if cluster_wide else tuple(a for ns in watched for a in ("--namespace", ns))
    objects: dict[str, Manifest] = {
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": NAMESPACE, "labels": {
                               **_labels("install"), "pod-security.kubernetes.io/enforce": "restricted"}}},
        "crd.yaml": shard_crd(),
    }
    texts: dict[str, str] = {}
    order = ["namespace.yaml", "crd.yaml"]
    # The agent watches every namespace when given none.
    for name, command, grants, args in ((OPERATOR, "operator", OPERATOR_GRANTS, scope_args + policy_args(policy)),
                                        # The shipped agent serves MultigresShards only: a pod no live
                                        # MultigresShard controls is ignored (agent/trust.py).
                                        (AGENT, "agent", AGENT_GRANTS,
                                         ("--owned-pods-only", *(() if cluster_wide else scope_args)))):
        objects[f"{command}-serviceaccount.yaml"] = {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": _labels(name)},
        }
        rbac_texts, rbac_objects = _rbac_files(command, name, grants, watched, cluster_wide)
        texts.update(rbac_texts)
        objects.update(rbac_objects)
        tls_args, tls_volumes, tls_mounts = agent_grpc_tls(agent_grpc_tls_secret if command == "agent" else None)
        objects[f"{command}-deployment.yaml"] = _deployment(name, image, command, (*args, *tls_args),
                                                            (tls_volumes, tls_mounts))
        objects[f"{command}-metrics-service.yaml"] = _metrics_service(name)
        order += [f"{command}-serviceaccount.yaml", *sorted(rbac_texts), *sorted(rbac_objects),
                  f"{command}-deployment.yaml", f"{command}-metrics-service.yaml"]
    texts["operator-nodes-clusterrole.yaml"] = _rbac_text("ClusterRole", keys.OPERATOR_NODES_ROLE, OPERATOR_NODE_GRANTS)
    nodes_binding = _binding("ClusterRoleBinding", keys.OPERATOR_NODES_ROLE)
    nodes_binding["subjects"] = [{"kind": "ServiceAccount", "name": OPERATOR, "namespace": NAMESPACE}]
    objects["operator-nodes-clusterrolebinding.yaml"] = nodes_binding
    order += ["operator-nodes-clusterrole.yaml", "operator-nodes-clusterrolebinding.yaml"]
    objects["agent-pod-policy.yaml"], objects["agent-pod-policy-binding.yaml"] = agent_pod_policy()
    order += ["agent-pod-policy.yaml", "agent-pod-policy-binding.yaml"]
    auth_role, auth_binding, reader = metrics_rbac()
    texts["metrics-auth-clusterrole.yaml"] = auth_role
    objects["metrics-auth-clusterrolebinding.yaml"] = auth_binding
    head = output.dump({k: v for k, v in reader.items() if k != "rules"})
    texts["metrics-reader-clusterrole.yaml"] = (
        f"{head}rules:\n# Bind your scraper to this (monitoring/ binds its own ServiceAccount): /metrics answers only\n"
        f"# tokens whose user may get it (--metrics-auth kubernetes).\n{output.dump(reader['rules'])}")
    order += ["metrics-auth-clusterrole.yaml", "metrics-auth-clusterrolebinding.yaml",
              "metrics-reader-clusterrole.yaml"]
    texts.update({path: output.dump(obj) for path, obj in objects.items()})
    if sorted(order) != sorted(texts):
        raise AssertionError("every bundle file is listed once in the kustomization")
    texts["kustomization.yaml"] = output.dump(output.kustomization(order))
    texts.update(monitoring.files())  # its own kustomization: apply it only where the CRDs exist
    return dict(sorted(texts.items()))
