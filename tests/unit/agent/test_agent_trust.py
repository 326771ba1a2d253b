"""What the agent may act for (agent/trust.py): pods by their controller, records by their fields
and the namespace their hostname names."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent import trust
from multigres_pools.agent.context import ShardView
from multigres_pools.dataplane.base import Pooler, PoolerId, ShardTopology

TOPO = ShardTopology(("etcd:2379",), "/g", "postgres", "default", "0-inf", ("z1",))


def _rec(service: str, hostname: str, shard: str = "0-inf") -> Pooler:
    return Pooler(PoolerId("z1", service), keys.Role.REPLICA, hostname, 15270, "postgres", "default", shard, "k")


def _pod(name: str, ref: dict[str, Any] | None = None, service_id: str = "p-1", ns: str = "db") -> dict[str, Any]:
    args = ["multipooler", "--topo-global-server-addresses=etcd:2379", "--topo-global-root=/g", "--cell=z1",
            "--database=postgres", "--table-group=default", "--shard=0-inf", f"--service-id={service_id}"]
    return {"metadata": {"name": name, "namespace": ns, **({"ownerReferences": [ref]} if ref else {})},
            "spec": {"containers": [{"name": "multipooler", "args": args}]}}


def _ref(uid: str, kind: str = keys.SHARD_KIND, blocking: bool = True) -> dict[str, Any]:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": kind, "name": "demo", "uid": uid, "controller": True,
            "blockOwnerDeletion": blocking}


def test_records_belong_by_shard_fields_and_hostname_namespace() -> None:
    assert trust.record_belongs(_rec("p-1", "pod-0.hl.db.svc.cluster.local"), TOPO, "db")
    assert not trust.record_belongs(_rec("p-1", "pod-0.hl.other.svc.cluster.local"), TOPO, "db")
    assert not trust.record_belongs(_rec("p-1", "pod-0.hl.db.svc", shard="80-"), TOPO, "db")
    assert trust.record_belongs(_rec("p-1", "pod-0"), TOPO, "db")  # a bare hostname says no namespace


def test_pods_are_trusted_by_their_live_controller() -> None:
    live = {"demo": "uid-1"}.get
    assert trust.pod_trusted(_pod("a", _ref("uid-1")), live, allow_unowned=False)
    assert not trust.pod_trusted(_pod("a", _ref("made-up")), live, allow_unowned=True)
    assert not trust.pod_trusted(_pod("a", _ref("uid-1", kind="ReplicaSet")), live, allow_unowned=True)
    # a copied reference without blockOwnerDeletion (which anyone creating pods may write) binds nothing
    assert not trust.pod_trusted(_pod("a", _ref("uid-1", blocking=False)), live, allow_unowned=True)
    assert trust.pod_trusted(_pod("a"), live, allow_unowned=True)
    assert not trust.pod_trusted(_pod("a"), live, allow_unowned=False)


def test_a_pod_never_takes_another_pods_record_through_its_service_id_flag() -> None:
    records = [_rec("p-1", "real-0.hl.db.svc.cluster.local"), _rec("p-2", "real-1.hl.other.svc.cluster.local")]
    view = ShardView("db", TOPO, [], records)
    assert view.own_id(_pod("real-0")) == PoolerId("z1", "p-1")
    assert view.own_id(_pod("forged", service_id="p-1")) is None  # names real-0's record
    assert view.own(_pod("real-1", service_id="p-2")) is None  # same name, but its record is another namespace's
    assert view.own_id(_pod("new", service_id="p-9")) == PoolerId("z1", "p-9")  # not registered yet


def test_shard_selector() -> None:
    shard = {"metadata": {"labels": {"team": "db"}}}
    assert trust.shard_selected(shard, "") and trust.shard_selected(shard, "team=db")
    assert not trust.shard_selected(shard, "team=web") and not trust.shard_selected(None, "team=db")
    with pytest.raises(ValueError, match="set-based"):
        trust.parse_shard_selector("team in (db)")
