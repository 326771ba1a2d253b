"""Credentials of a ServiceAccount on the real apiserver, for tests that act as it (not as admin)."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import KubeClient


def token(admin: KubeClient, account: str, namespace: str = keys.INSTALL_NAMESPACE, seconds: int = 3600) -> str:
    """A bound token for `account` from the TokenRequest API."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    return admin.request("create", "POST", path, body=body)["status"]["token"]
