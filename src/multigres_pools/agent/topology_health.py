"""The agent's topology verdict on a MultigresShard: ANN_TOPOLOGY_HEALTH, which the operator turns into
the TopologyUnreachable condition (plugins/module_utils/status/stalls.py).

Written only on a change: unreachable once reads of the shard's topology have failed for
--topology-stall-after seconds in a row, reachable again at the first read that works. The metric
follows every pass.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from . import podinfo
from .context import Context, ShardView
from .kube import now_rfc3339

REASON = "TopologyUnavailable"


def _reported(shard: Manifest) -> dict[str, Any]:
    return facts.json_annotation(shard, keys.ANN_TOPOLOGY_HEALTH) or {}  # unreadable: written again below


def observed(ctx: Context, failing_since: dict[tuple[str, str], float], view: ShardView, error: str | None) -> None:
    """Record one read of the shard's topology: `error` is None when it worked."""
    shard = view.shard
    if shard is None:
        return  # vars mode: no MultigresShard to report on; the metric and the log still tell
    key = (podinfo.namespace(shard), podinfo.name(shard))
    ctx.metrics.topology_reachable.labels(*key).set(0 if error else 1)
    reported, now = _reported(shard), ctx.clock()
    where = f"the topology etcd at {','.join(view.topology.global_addresses)} (root {view.topology.global_root})"
    if error is None:
        failing_since.pop(key, None)
        if reported.get("reachable") is False:
            _write(ctx, shard, {"reachable": True, "since": now_rfc3339(now),
                                "message": f"the agent reads {where} again"})
            ctx.kube.event(shard, "TopologyReachable", f"the agent reads {where} again")
        return
    first = failing_since.setdefault(key, now)
    if now - first < ctx.config.topology_stall_after_s or reported.get("reachable") is False:
        return
    message = f"the agent cannot read {where} since {now_rfc3339(first)}: {error}"
    _write(ctx, shard, {"reachable": False, "since": now_rfc3339(first), "reason": REASON, "message": message})
    ctx.kube.event(shard, keys.ShardCondition.TOPOLOGY_UNREACHABLE, f"{message}; drains, role labels and pruning of "
                   "this shard wait until it answers", warning=True)


def _write(ctx: Context, shard: Manifest, verdict: dict[str, Any]) -> None:
    ctx.effect("write:topology-health")
    ctx.kube.patch_shard_annotations(shard, {keys.ANN_TOPOLOGY_HEALTH: json.dumps(verdict, sort_keys=True)})
    ctx.log.warning("topology verdict published", extra={"shard": podinfo.name(shard), "verdict": verdict})
