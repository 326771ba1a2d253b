"""The agent dials the IP of the pod it listed, not the pooler's registered name (podaddress.py): a
replaced pod keeps its name and gets a new IP, and a gRPC channel re-resolves a name at most every
30 s, so through cluster DNS the agent reached a successor up to half a minute late (the readiness
verdict 18.6-19.2 s after PostgreSQL was ready on the real node, 0.3-1.5 s since). Against real gRPC servers (the
era-A double, one per incarnation, on two loopback addresses and the same port) and a real etcd."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from multigres_pools.agent import __main__ as agent_main
from multigres_pools.dataplane.base import DataPlaneError, Pooler, PoolerId, ShardTopology, find_primary
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.playground.era_a_double import MultipoolerPeer
from multigres_pools.podaddress import PodAddresses, pod_key

FQDN = "play-0.play-pool.db.svc.cluster.local"  # resolves nowhere here: only the map can dial it


def _pod(name: str, ip: str | None, namespace: str = "db") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "status": {"podIP": ip} if ip else {}}


def test_a_pod_fqdn_names_its_namespace_and_pod_and_other_names_nothing() -> None:
    assert pod_key(FQDN) == ("db", "play-0")
    assert pod_key("play-0.play-pool.db") == ("db", "play-0")
    for other in ("10.0.0.7", "localhost", "etcd.db", "", "a..b"):
        assert pod_key(other) is None, other


def test_each_observation_replaces_its_groups_pods() -> None:
    addresses = PodAddresses()
    addresses.note("shard-a", [_pod("play-0", "10.0.0.7"), _pod("play-1", None)])
    addresses.note("shard-b", [_pod("other-0", "10.0.0.9", namespace="x")])
    assert addresses.dial_host(FQDN) == "10.0.0.7"
    assert addresses.dial_host("play-1.play-pool.db.svc.cluster.local") == "play-1.play-pool.db.svc.cluster.local"
    assert addresses.dial_host("other-0.s.x.svc") == "10.0.0.9"
    # The successor, listed by the next pass under the same name: its address from then on.
    addresses.note("shard-a", [_pod("play-0", "10.0.0.8")])
    assert addresses.dial_host(FQDN) == "10.0.0.8"
    # A pod its group no longer lists is dialed by name again; other groups keep theirs.
    addresses.note("shard-a", [])
    assert addresses.dial_host(FQDN) == FQDN
    assert addresses.dial_host("other-0.s.x.svc") == "10.0.0.9"
    # Same pod name in another namespace is another pod.
    assert addresses.dial_host("other-0.s.y.svc") == "other-0.s.y.svc"


@pytest.fixture
def topology(private_etcd) -> ShardTopology:  # type: ignore[no-untyped-def]
    return ShardTopology((private_etcd.endpoint,), f"/multigres/{uuid.uuid4().hex[:8]}", "postgres", "default",
                         "0-inf", ("zone1",))


def _incarnation(topo: ShardTopology, address: str, port: int = 0) -> MultipoolerPeer:
    peer = MultipoolerPeer(hostname=FQDN, role="PRIMARY", service_id="p-00000001")
    peer.start(address=address, port=port)
    peer.set_sync_standbys([("zone1", "p-00000002")])
    peer.register(topo.global_addresses[0], topo.global_root)
    return peer


def _sync_members(plane: EraA, topo: ShardTopology) -> list[str]:
    primary = find_primary(plane.list_poolers(topo))
    assert primary is not None
    return [m.name for m in plane.sync_replication(primary).standbys]


def test_the_successor_is_reached_from_the_pass_that_lists_it_and_the_old_channel_goes(topology) -> None:
    addresses = PodAddresses()
    plane = EraA(dial_host=addresses.dial_host, rpc_timeout=2)
    first = _incarnation(topology, "127.0.0.1")
    successor: MultipoolerPeer | None = None
    try:
        addresses.note("play", [_pod("play-0", "127.0.0.1")])
        assert _sync_members(plane, topology) == ["p-00000002"]
        first.stop()  # the pod is replaced: same name, same port, another IP
        successor = _incarnation(topology, "127.0.0.2", first.port)
        with pytest.raises(DataPlaneError):
            _sync_members(plane, topology)  # still dialing the old address: what a stale name does
        addresses.note("play", [_pod("play-0", "127.0.0.2")])
        assert _sync_members(plane, topology) == ["p-00000002"]  # the first call after the pass
        assert list(plane._channels) == [f"127.0.0.2:{first.port}"]  # one channel per pooler, not per incarnation
    finally:
        first.stop()
        if successor is not None:
            successor.stop()
        plane.close()


def test_the_shipped_agent_dials_the_pods_its_passes_list(tmp_path) -> None:
    """build() without a mapping (the bundle's agent) hands its adapter the agent's own pod map."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    runtime = agent_main.build(["--kubeconfig", str(kubeconfig), "--multigres-version", "v0.1.0"])
    ctx = runtime.agent.ctx
    try:
        pooler = Pooler(PoolerId("zone1", "p-00000001"), None, FQDN, 15270, "postgres", "default", "0-inf", "k")
        assert ctx.dataplane.dial_target(pooler) == f"{FQDN}:15270"  # not listed yet: the name
        ctx.pod_addresses.note(("db", "play"), [_pod("play-0", "10.0.0.7")])
        assert ctx.dataplane.dial_target(pooler) == "10.0.0.7:15270"
    finally:
        ctx.close()
