"""Which pods the status screen shows: the shard's own, not another shard's in the same namespace, nor
a pod that only copies its labels (the engine counts neither)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.report.gather import gather

UID = "uid-play"


def _pod(name: str, owner_uid: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "play", "creationTimestamp": "2026-11-26T00:00:00Z",
                            "labels": {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL, keys.LABEL_APP_INSTANCE: "play"}}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "x",
                                    "uid": owner_uid, "controller": True, "blockOwnerDeletion": True}]
    return {"metadata": meta, "spec": {"containers": []}, "status": {"phase": "Running"}}


class _Kube:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": namespace, "uid": UID, "generation": 1},
                "spec": {"clusterName": "play"}, "status": {}}

    def list(self, api_version: str, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        assert (kind, selector) == ("Pod", f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
        return self.pods


def test_only_the_pods_the_shard_controls_are_shown() -> None:
    kube = _Kube([_pod("play-0", UID), _pod("other-0", "uid-other"), _pod("forged-0", None), _pod("play-1", UID)])
    report = gather(kube, "play", "play")  # type: ignore[arg-type]
    assert [p.name for p in report.pods] == ["play-0", "play-1"]
    assert report.data_plane.error  # no topology to ask: said, not raised
