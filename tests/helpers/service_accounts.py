"""The install bundle's ServiceAccounts on the real apiserver, for tests that act as them (not as
admin): their RBAC and admission policy from `bundle.files()`, bound tokens, and token kubeconfigs
for the operator and agent processes."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.install import bundle
from tests.helpers.polling import eventually

RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
              "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
ACCOUNTS = (bundle.OPERATOR, bundle.AGENT)


def token(admin: KubeClient, account: str, namespace: str = keys.INSTALL_NAMESPACE, seconds: int = 3600) -> str:
    """A bound token for `account` from the TokenRequest API."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    return admin.request("create", "POST", path, body=body)["status"]["token"]


def ensure_namespace(admin: KubeClient, name: str) -> bool:
    """Make `name` unless it exists (waiting out an earlier test's deletion); True when made here."""
    def settled() -> dict[str, Any] | bool:
        live = admin.get("v1", "Namespace", None, name)
        return live is None or not facts.is_terminating(live)
    eventually(settled, 120, f"namespace {name} to finish terminating")
    if admin.get("v1", "Namespace", None, name) is not None:
        return False
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="test")
    return True


@contextlib.contextmanager
def installed_rbac(admin: KubeClient, namespace: str, *, cluster_wide: bool = False) -> Iterator[dict[str, str]]:
    """The bundle's RBAC objects for watching `namespace` (or everything); yields {account: token}.
    Everything made here is removed afterwards, except what lives in `namespace` (it goes with it)."""
    made_ns = ensure_namespace(admin, keys.INSTALL_NAMESPACE)
    docs = [yaml.safe_load(text) for text in bundle.files(namespaces=(namespace,), cluster_wide=cluster_wide).values()]
    docs = [d for d in docs if d.get("kind") in RBAC_KINDS]
    try:
        for doc in docs:
            admin.apply(doc, "test")
        yield {a: token(admin, a) for a in ACCOUNTS}
    finally:
        for doc in reversed(docs):
            md = doc["metadata"]
            if md.get("namespace") != namespace:
                admin.delete(doc["apiVersion"], doc["kind"], md.get("namespace"), md["name"])
        if made_ns:
            admin.delete("v1", "Namespace", None, keys.INSTALL_NAMESPACE)


def kubeconfig(admin_kubeconfig: Path, bearer: str, path: Path) -> Path:
    """A kubeconfig at `path` for the same server as `admin_kubeconfig`, authenticating with `bearer`."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = dict(admin["clusters"][0]["cluster"])
    if "certificate-authority" in cluster:
        ca = Path(cluster.pop("certificate-authority")).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "sa", "cluster": cluster}],
        "users": [{"name": "sa", "user": {"token": bearer}}],
        "contexts": [{"name": "sa", "context": {"cluster": "sa", "user": "sa"}}],
    }))
    path.chmod(0o600)
    return path
