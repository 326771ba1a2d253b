"""The report's I/O: the MultigresShard and its pool pods from the API server, then the data plane.

    report = gather(kube, "play", "play", dial_host=lambda host: host)

LookupError when the shard does not exist; KubeError and OSError from the API server are the
caller's to word. What the data plane does not answer is in `report.data_plane`, never raised.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import ownership

from . import plane_ask, plane_facts, shard_facts
from .model import Report


def gather(kube: KubeClient, namespace: str, shard: str, *, dial_host: Callable[[str], str] | None = None,
           dial_pod_ips: bool = False, rpc_timeout: float = 5.0) -> Report:
    cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, shard)
    if cr is None:
        raise LookupError(f"no MultigresShard {namespace}/{shard}")
    # The shard's own pool pods: those it controls (what the engine counts), not another shard's in the
    # same namespace, nor a pod that only copies its labels.
    owner = ownership.Owner.of(cr)
    pods = [p for p in kube.list("v1", "Pod", namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
            if owner is not None and owner.controls(p)]
    report = shard_facts.report(cr, pods, dt.datetime.now(dt.UTC))
    plane_facts.merge(report, plane_ask.ask(cr, pods, dial_host, rpc_timeout), dial_pod_ips)
    return report
