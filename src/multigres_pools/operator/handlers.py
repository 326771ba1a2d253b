"""The kopf side: thin event handlers that hand every event to the Controller.

Only `@kopf.on.event` handlers are used: they keep no progress annotations, add no finalizers and
post no events, so watching writes nothing to the cluster and a converged shard costs zero writes.
Child watches are filtered server-side on the shard label, so only pool objects are streamed.
"""

from __future__ import annotations

from typing import Any

import kopf
from ansible_collections.multigres.pools.plugins.module_utils import keys

from .controller import Controller

# kind -> (group/version, plural); the objects whose changes a reconcile reacts to.
CHILDREN: dict[str, tuple[str, str]] = {
    "Pod": ("v1", "pods"),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets"),
}


def settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.posting.enabled = False  # our Events come from the reconcile module, with reasons users can act on
    s.scanning.disabled = True  # no cluster-wide CRD/namespace watch, so RBAC stays namespace-scoped
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    for group_version, plural in CHILDREN.values():
        s.watching.label_selectors[group_version, plural] = keys.LABEL_SHARD
    return s


def registry(controller: Controller) -> kopf.OperatorRegistry:
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_via_client(**kwargs)

    @kopf.on.event(keys.API_GROUP, keys.API_VERSION, keys.SHARD_PLURAL, registry=reg)
    async def shard_event(event: kopf.RawEvent, **_: Any) -> None:
        controller.shard_event(event.get("type"), event["object"])

    for kind, (group_version, plural) in CHILDREN.items():
        on_child = kopf.on.event(group_version, plural, registry=reg, id=f"{plural}-event")
        on_child(_child_handler(controller, kind))
    return reg


def _child_handler(controller: Controller, kind: str):  # type: ignore[no-untyped-def]
    async def handler(event: kopf.RawEvent, **_: Any) -> None:
        controller.child_event(kind, event.get("type"), event["object"])

    return handler
