"""Reports a refused MultigresShard when the playbook failed on its spec before the module could write
status itself (for example a spec the module cannot even parse): the same status the engine writes
(`status.refused`: the refused generation observed, Ready=False, Stalled=True, phase Degraded), so
GitOps health turns Degraded/Failed instead of waiting for a generation that never comes.
"""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status


class InvalidSpecReporter:
    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    def __call__(self, namespace: str, name: str, message: str) -> None:
        obj = self.kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name)
        if obj is None:
            return  # deleted meanwhile: nothing to report on
        meta = obj.get("metadata", {})
        previous = obj.get("status") or {}
        now = facts.format_time(dt.datetime.now(dt.UTC))
        new = status.refused(previous, [message], meta.get("generation"), now)
        if not status.changed(previous, new):
            return
        # The resourceVersion makes this a compare-and-swap: a concurrent status write wins.
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": {k: new[k] for k in ("observedGeneration", "phase", "message", "conditions") if k in new}}
        self.kube.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name, body,
                              field_manager=keys.STATUS_FIELD_MANAGER, subresource="status")
