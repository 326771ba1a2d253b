"""The harness's pod timeline reads what a drain was held for from each pod version it saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.playground.localstack import PodTimeline, pod_event


def _pod(uid: str, blocked: str | None) -> dict[str, Any]:
    annotations = {keys.ANN_DRAIN_STATE: keys.DrainState.REQUESTED.value}
    if blocked is not None:
        annotations[keys.ANN_DRAIN_BLOCKED] = blocked
    return {"metadata": {"name": "p-0", "uid": uid, "annotations": annotations}, "spec": {}, "status": {}}


def test_a_pod_version_carries_its_drain_blocked_reason() -> None:
    assert pod_event("MODIFIED", _pod("u", "cohort-below-durability-policy"), 1.0).blocked == \
        "cohort-below-durability-policy"
    assert pod_event("MODIFIED", _pod("u", None), 1.0).blocked is None


def test_drain_blocks_lists_each_reason_once_in_the_order_first_seen_for_that_pod_only() -> None:
    timeline = PodTimeline(Path("/nonexistent/kubeconfig"), "play")
    for at, (uid, blocked) in enumerate([("a", None), ("a", "standbys-not-streaming"), ("b", "backup-in-progress"),
                                         ("a", "cohort-below-durability-policy"), ("a", "standbys-not-streaming")]):
        timeline.events.append(pod_event("MODIFIED", _pod(uid, blocked), float(at)))
    assert timeline.drain_blocks("a") == ["standbys-not-streaming", "cohort-below-durability-policy"]
    assert timeline.drain_blocks("b") == ["backup-in-progress"]
    assert timeline.drain_blocks("c") == []
