"""The agent's etcd client uses every endpoint of a topology: dialled in order, failing over on a
connection failure, against a real etcd (the private one of tests/unit/agent/conftest.py)."""

from __future__ import annotations

import uuid

import pytest

from multigres_pools.dataplane.base import ShardTopology, TopologyUnavailable
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.dataplane.v0_1 import V0_1


def test_a_refused_first_endpoint_fails_over_to_the_next(private_etcd, closed_port) -> None:
    key = f"/t-{uuid.uuid4().hex[:8]}/k"
    etcd = Etcd([closed_port, private_etcd.endpoint])
    try:
        etcd.put(key, b"v")
        assert etcd.get(key)[0] == b"v"
        assert etcd.create(key, b"w") is False  # transactions go through the same failover
    finally:
        etcd.delete(key)
    assert Etcd(private_etcd.endpoint).get(key) is None


def test_a_silent_endpoint_fails_over_after_its_timeout(private_etcd, silent_port) -> None:
    etcd = Etcd(f"{silent_port},{private_etcd.endpoint}", timeout=0.5)
    assert etcd.get(f"/t-{uuid.uuid4().hex[:8]}/absent") is None
    assert etcd.get(f"/t-{uuid.uuid4().hex[:8]}/absent") is None  # the answering endpoint is kept


def test_no_endpoint_answering_names_each(closed_port, silent_port) -> None:
    with pytest.raises(TopologyUnavailable) as err:
        Etcd([closed_port, silent_port], timeout=0.5).get("/k")
    assert closed_port in err.value.message and silent_port in err.value.message


def test_the_adapter_reads_a_topology_whose_first_endpoint_is_down(private_etcd, closed_port, root) -> None:
    plane = V0_1(rpc_timeout=3)
    try:
        real = private_etcd.endpoint.removeprefix("http://")
        topo = ShardTopology((closed_port, real), root, "postgres", "default", "0-inf", ("zone1",))
        assert plane.list_poolers(topo) == []
    finally:
        plane.close()
