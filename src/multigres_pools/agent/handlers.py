"""kopf wiring: thin handlers that hand each event to the Agent. All logic lives in plain functions.

Only `on.event` handlers are used: kopf then writes nothing to the watched objects (no finalizers,
no last-handled annotations), so pods carry exactly the finalizer the engine put there.
"""

from __future__ import annotations

import json
from typing import Any, cast

import kopf
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import Credentials

from .core import Agent


def connection_info(creds: Credentials) -> kopf.ConnectionInfo:
    """kopf's watches log in with the agent's own credentials (kubeconfig or in-cluster): one source."""
    scheme, _, secret = creds.headers().get("Authorization", "").partition(" ")
    return kopf.ConnectionInfo(
        server=creds.server,
        ca_data=creds.ca_data,
        insecure=creds.insecure,
        certificate_data=creds.cert_data,
        private_key_data=creds.key_data,
        # Read at each login: a projected service-account token file rotates.
        token=secret if scheme == "Bearer" else None,
        username=creds.basic[0] if creds.basic else None,
        password=creds.basic[1] if creds.basic else None,
        scheme="Bearer" if scheme == "Bearer" else None,
    )


def _plain(body: kopf.Body) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(json.dumps(dict(body), default=dict)))  # an object in, one out


def build_registry(agent: Agent, creds: Credentials) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(creds)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # our own events carry the reasons; kopf's would duplicate them
        settings.watching.server_timeout = 300
        settings.execution.max_workers = 4
        # The namespaces are named exactly and the resources are fixed, so kopf needs no scanning of
        # CRDs and namespaces; with it, the bundle's least-privilege RBAC (no cluster-wide list of
        # either) cost ~55 s of forbidden retries before the first pod event was handled.
        settings.scanning.disabled = True

    @kopf.on.event("", "v1", "pods", labels={keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}, registry=registry)
    def pool_pod(body: kopf.Body, type: str | None, **_: Any) -> None:
        if type == "DELETED":
            return
        if type is None:
            agent.remember(_plain(body))  # the initial listing: the periodic pass takes it from here
            return
        agent.on_pod(_plain(body))

    @kopf.on.event(keys.API_GROUP, keys.API_VERSION, keys.SHARD_PLURAL, registry=registry)
    def shard(body: kopf.Body, type: str | None, **_: Any) -> None:
        if type == "DELETED":
            return
        agent.on_shard(_plain(body))

    return registry
