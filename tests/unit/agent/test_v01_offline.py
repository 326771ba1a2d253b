"""The v0.1.0 adapter where no Multigres v0.1.0 is needed: its records in a private etcd, its
refusal to act on era-A records and an era-A pooler, the durability arithmetic, the selector.
(Against real v0.1.0: tests/integration/dataplane_v01.)"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming

from multigres_pools import dataplane
from multigres_pools.dataplane.base import (
    DataPlaneError,
    Durability,
    Leadership,
    Orchestrator,
    Pooler,
    PoolerId,
    RefusalReason,
    ShardTopology,
    SyncReplication,
    VersionMismatch,
)
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.dataplane.v0_1 import MANAGER, ORCH, V0_1
from multigres_pools.playground.era_a_double import MultipoolerPeer
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multiorchdata_pb2 as mod
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd


def _topo(endpoint: str, root: str) -> ShardTopology:
    return ShardTopology((endpoint,), root, "postgres", "default", "0-inf", ("zone1",))


def _record(name: str, type_: int, serving: int = cm.SERVING, shard: str = "0-inf") -> bytes:
    return cm.MultiPooler(
        id=cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=name),
        shard_key=cm.ShardKey(database="postgres", table_group="default", shard=shard),
        type=type_, serving_status=serving, hostname=f"{name}.hl.ns.svc", port_map={"grpc": 15270},
    ).SerializeToString()


@pytest.fixture
def v01():
    plane = V0_1(rpc_timeout=3, dial_host=lambda host: "127.0.0.1")
    yield plane
    plane.close()


def test_v01_records_decode_and_a_graceful_stop_has_no_role(private_etcd, root, v01) -> None:
    etcd = Etcd(private_etcd.endpoint)
    for name, type_, serving in (("p-1", cm.PRIMARY, cm.SERVING), ("p-2", cm.REPLICA, cm.SERVING),
                                 ("p-3", cm.DRAINED, cm.NOT_SERVING), ("p-4", cm.DRAINED, cm.SERVING)):
        etcd.put(naming.pooler_key(root, "zone1", name), _record(name, type_, serving))
    etcd.put(naming.pooler_key(root, "zone1", "p-x"), _record("p-x", cm.REPLICA, shard="other"))
    got = {p.id.name: p for p in v01.list_poolers(_topo(private_etcd.endpoint, root))}
    assert sorted(got) == ["p-1", "p-2", "p-3", "p-4"]
    assert [got[n].role for n in ("p-1", "p-2", "p-3")] == [keys.Role.PRIMARY, keys.Role.REPLICA, None]
    assert got["p-3"].stopped and not got["p-4"].stopped
    assert got["p-4"].role is keys.Role.DRAINED  # multiorch's DRAINED (pg_rewind infeasible) keeps serving
    assert got["p-1"].grpc_port == 15270 and got["p-1"].matches_pod("p-1")


def test_each_adapter_refuses_the_other_versions_records(private_etcd, root, v01) -> None:
    topo = _topo(private_etcd.endpoint, root)
    with MultipoolerPeer(service_id="p-0000aaaa", hostname="pod-0.hl.ns.svc", role="PRIMARY") as peer:
        peer.register(private_etcd.endpoint, root)
        with pytest.raises(VersionMismatch) as err:
            v01.list_poolers(topo)
        assert "era-A" in err.value.message and err.value.reason is RefusalReason.VERSION_MISMATCH
        # Status answers on the same path in both versions; the era-A schema shows in field 7.
        rec = EraA(dial_host=lambda host: "127.0.0.1").list_poolers(topo)[0]
        with pytest.raises(VersionMismatch):
            v01.status(rec)
        with pytest.raises(DataPlaneError) as err:
            v01.remove_standby(rec, PoolerId("zone1", "p-1"))
        assert err.value.reason is RefusalReason.VERSION_MISMATCH
    etcd = Etcd(private_etcd.endpoint)
    etcd.delete(naming.pooler_key(root, "zone1", "p-0000aaaa"))
    etcd.put(naming.pooler_key(root, "zone1", "p-1"), _record("p-1", cm.PRIMARY))
    with pytest.raises(VersionMismatch) as err:
        EraA().list_poolers(topo)
    assert "v0.1.0 record" in err.value.message
    # Another shard's records in the same cell root are none of our business, in either schema.
    assert v01.list_poolers(ShardTopology(topo.global_addresses, root, "postgres", "default", "x", ("zone1",))) == []


A, B, C, P = (PoolerId(c, n) for c, n in (("zone1", "a"), ("zone2", "b"), ("zone2", "c"), ("zone1", "p")))


@pytest.mark.parametrize(("policy", "connected", "leaving", "ok"), [
    (Durability(2), (A, B), A, True),            # P + B left
    (Durability(2), (A,), A, False),              # B is not streaming: only P would be left
    (Durability(3), (A, B, C), C, True),
    (Durability(3), (A, B, C), A, True),
    (Durability(4), (A, B, C), A, False),
    (Durability(2, multi_cell=True), (A, B, C), B, True),   # zone1 (P) + zone2 (C)
    (Durability(2, multi_cell=True), (A, B), B, False),    # only zone1 left (P, A)
    (None, (), A, True),                          # era A: the server decides
])
def test_durable_without_counts_the_leader_and_streaming_standbys(policy, connected, leaving, ok) -> None:
    sync = SyncReplication(True, (A, B, C), connected, cohort=(A, B, C, P), leader=P, durability=policy)
    assert sync.durable_without(leaving) is ok
    assert sync.lists(A) and not sync.lists(PoolerId("zone9", "z"))


def test_a_follower_whose_receiver_does_not_stream_does_not_keep_the_cohort_durable() -> None:
    """The primary lists B (a walsender row) but B says its WAL receiver is not streaming: taking A away
    would leave the primary alone under AT_LEAST_2, so the drain must wait. Era A (no round) changes nothing."""
    sync = SyncReplication(True, (A, B), (A, B), cohort=(A, B, P), leader=P, durability=Durability(2))
    said = Leadership(None, P, writable=frozenset({P}), in_recovery=frozenset({A, B}), streaming=frozenset({A}))
    assert said.silent == frozenset({B})
    assert sync.durable_without(A) and not sync.without(said.silent).durable_without(A)
    assert sync.without(said.silent).connected == (A,) and sync.without(Leadership(None, None).silent) == sync


def test_for_version_picks_the_adapter() -> None:
    assert isinstance(dataplane.for_version(keys.MultigresVersion.V0_1_0), V0_1)
    assert isinstance(dataplane.for_version("d782aa06"), EraA)
    assert isinstance(dataplane.for_version(), V0_1) and keys.DEFAULT_MULTIGRES_VERSION == "v0.1.0"
    assert isinstance(dataplane.make("a"), EraA) and isinstance(dataplane.make("v0.1"), V0_1)
    expected = "spec.multigres.version 'v9' is not supported; known: v0.1.0, d782aa06"
    with pytest.raises(ValueError, match=re.escape(expected)):
        dataplane.for_version("v9")
    assert not EraA.supports_eligibility and V0_1.supports_eligibility
    with pytest.raises(NotImplementedError):
        EraA().make_ineligible(None)


def _orch(cell: str, name: str, port: int | None = 15370) -> bytes:
    return cm.MultiOrch(id=cm.ID(component=cm.ID.MULTIORCH, cell=cell, name=name), hostname="10.0.0.9",
                        port_map={"grpc": port} if port else {}).SerializeToString()


def test_only_this_shards_multiorchs_are_found_in_its_cells(private_etcd, root, v01) -> None:
    """Another shard's multiorch shares the cell (and its TriggerRecoveryNow would expire that
    shard's grace periods): only the names of this shard's Deployment count."""
    etcd = Etcd(private_etcd.endpoint)
    sid = naming.ShardId("demo", "postgres", "default", "0-inf")
    mine = naming.multiorch_deployment_name(sid, "zone1")
    other = naming.multiorch_deployment_name(naming.ShardId("demo", "postgres", "default", "inf-"), "zone1")
    for name in (f"{mine}-5d8f-abcde", f"{other}-77aa-zzzzz"):
        etcd.put(naming.topo_path(root, "orchs", f"multiorch-zone1-{name}", "Orch"), _orch("zone1", name))
    etcd.put(naming.topo_path(root, "orchs", "multiorch-zone1-garbage", "Orch"), b"\xff\xff not a record")
    found = v01.orchestrators(_topo(private_etcd.endpoint, root), {"zone1": mine + "-"})
    assert [(o.cell, o.name, o.hostname, o.grpc_port) for o in found] == [
        ("zone1", f"{mine}-5d8f-abcde", "10.0.0.9", 15370)]
    assert v01.orchestrators(_topo(private_etcd.endpoint, root), {"zone2": mine + "-"}) == []


def test_an_unreachable_multiorch_is_named(v01, closed_port) -> None:
    host, port = closed_port.rsplit(":", 1)
    with pytest.raises(DataPlaneError) as refused:
        v01.trigger_recovery(Orchestrator("zone1", "orch-1", host, int(port)))
    assert refused.value.reason is RefusalReason.ORCHESTRATOR_UNREACHABLE
    assert "orch-1" in refused.value.message
    with pytest.raises(DataPlaneError, match="publishes no grpc address"):
        v01.trigger_recovery(Orchestrator("zone1", "orch-2", "10.0.0.9", None))


def test_a_multiorch_still_electing_after_three_seconds_is_waited_for(v01) -> None:
    """TriggerRecoveryNow returns when multiorch's cycle (the election included) is over; on the loaded
    real node one took 5.2 s. A shorter deadline timed out every call while multiorch went on electing,
    and the agent then reported multiorch as never asked."""
    received = threading.Event()

    def electing(request: mod.TriggerRecoveryNowRequest,
                 context: grpc.ServicerContext) -> mod.TriggerRecoveryNowResponse:
        received.set()
        time.sleep(4.5)
        return mod.TriggerRecoveryNowResponse(remaining_problem_codes=["ReplicaNotReplicating"])

    service, method = ORCH.strip("/"), "TriggerRecoveryNow"
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, {
        method: grpc.unary_unary_rpc_method_handler(electing, mod.TriggerRecoveryNowRequest.FromString,
                                                    mod.TriggerRecoveryNowResponse.SerializeToString)})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        assert v01.trigger_recovery(Orchestrator("zone1", "orch-1", "127.0.0.1", port)) == ("ReplicaNotReplicating",)
        assert received.is_set()
    finally:
        server.stop(grace=None)


def test_a_short_deadline_bounds_telling_a_stopping_pooler_ineligible(v01) -> None:
    """The finalizer path tells a deleted pod's pooler INELIGIBLE with a deadline of its own: once that
    pooler has exited, a call to its vanished address waited out the whole RPC timeout (10 s of the
    pod's deletion on the real node). The call carries the short deadline and ends as unreachable."""
    deadlines: list[float] = []
    release = threading.Event()

    def stopping(request: mpd.StatusRequest, context: grpc.ServicerContext) -> mpd.StatusResponse:
        deadlines.append(context.time_remaining())
        release.wait(10)  # never answers within the caller's deadline
        return mpd.StatusResponse()

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(MANAGER.strip("/"), {
        "Status": grpc.unary_unary_rpc_method_handler(stopping, mpd.StatusRequest.FromString,
                                                      mpd.StatusResponse.SerializeToString)})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    pooler = Pooler(PoolerId("zone1", "p-1"), keys.Role.REPLICA, "127.0.0.1", port, "postgres", "default", "0-inf",
                    "/k")
    try:
        with pytest.raises(DataPlaneError) as refused:
            v01.make_ineligible(pooler, timeout_s=0.2)
        assert refused.value.reason is RefusalReason.POOLER_UNREACHABLE, refused.value
        assert "DEADLINE_EXCEEDED" in refused.value.message
        # The fixture's adapter has a 3 s RPC timeout: the call carried the short one instead.
        assert len(deadlines) == 1 and 0 < deadlines[0] <= 0.2
    finally:
        release.set()
        server.stop(grace=None)
