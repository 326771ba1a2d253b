"""A v0.1.0 primary's drain starts once every other standby streams from it (or the settle is over).

multiorch v0.1.0 runs one recovery action at a time: a successor that is Ready but not yet streaming
gets a FixReplication whose verification holds the primary's election for seconds (`make demo`)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState

from multigres_pools.agent.context import ShardView
from multigres_pools.agent.drain import Blocked, Facts, decide
from multigres_pools.agent.drain_runner import _settling, standbys_not_streaming
from multigres_pools.dataplane.base import Pooler, PoolerId, ShardTopology, SyncReplication

TOPO = ShardTopology(("etcd:2379",), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))
R, D = DrainState.REQUESTED, DrainState.DRAINING


def pooler(name: str) -> Pooler:
    return Pooler(PoolerId("zone1", name), keys.Role.REPLICA, f"{name}.hl", 15270, "postgres", "default", "0-inf",
                  f"/k/{name}")


def pod(name: str, **annotations: str) -> dict:
    args = ["--topo-global-server-addresses=etcd:2379", "--topo-global-root=/multigres/global", "--cell=zone1",
            "--database=postgres", "--table-group=default", "--shard=0-inf", f"--service-id={name}"]
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"containers": [{"name": "multipooler", "args": args}]}}


def sync(*connected: str) -> SyncReplication:
    return SyncReplication(True, standbys=(), connected=tuple(PoolerId("zone1", c) for c in connected))


def test_a_standby_that_does_not_stream_holds_the_primary_drain_in_requested_only() -> None:
    f = Facts(by_eligibility=True, is_primary=True, failover_target=True, not_streaming=("p-c",))
    assert (decide(R, f).kind, decide(R, f).reason) == ("block", Blocked.STANDBYS_NOT_STREAMING)
    assert decide(D, f).state is DrainState.ACKNOWLEDGED  # once started, it is not held again
    assert decide(R, Facts(by_eligibility=True, is_primary=True, failover_target=True)).state is D
    # Safety first: no failover target blocks whatever the standbys do.
    f = Facts(by_eligibility=True, is_primary=True, failover_target=False, not_streaming=("p-c",))
    assert decide(R, f).reason == Blocked.NO_FAILOVER_TARGET


def test_only_live_standbys_that_stay_count() -> None:
    names = ["p-a", "p-b", "p-c", "p-d", "p-e", "p-f"]
    pods = [pod("p-a"), pod("p-b"), pod("p-c"), pod("p-d", **{keys.ANN_DRAIN_STATE: "draining"}),
            pod("p-e", **{keys.ANN_POSTGRES_STUCK: "2026-12-03T00:00:00Z"}), pod("p-f")]
    pods[5]["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    poolers = [pooler(n) for n in names] + [pooler("p-gone")]  # a record with no pod
    view = ShardView("ns", TOPO, pods, poolers)
    primary = pods[0]
    # p-b streams; p-c does not; the draining, the stuck and the deleting pod, and the pod-less record don't count.
    assert standbys_not_streaming(view, primary, sync("p-b")) == ("p-c",)
    assert standbys_not_streaming(view, primary, sync("p-b", "p-c")) == ()
    # The primary itself is never its own standby, streaming or not.
    assert "p-a" not in standbys_not_streaming(view, primary, sync())


@pytest.mark.parametrize(("state", "waited", "expected", "warned"), [
    (DrainState.REQUESTED, 5.0, ("p-c",), False),   # within the settle: it waits for p-c
    (DrainState.REQUESTED, 30.0, (), True),         # the settle is over: it goes on, and says so
    (DrainState.DRAINING, 30.0, (), False),         # started: never held again, nothing to warn about
    (DrainState.ACKNOWLEDGED, 5.0, (), False),
])
def test_the_settle_is_looked_at_in_requested_only(state: DrainState, waited: float, expected: tuple[str, ...],
                                                   warned: bool, caplog: pytest.LogCaptureFixture) -> None:
    requested_at = "2026-12-03T00:00:00Z"
    pods = [pod("p-a", **{keys.ANN_DRAIN_STATE: state.value, keys.ANN_DRAIN_REQUESTED_AT: requested_at}),
            pod("p-b"), pod("p-c")]
    view = ShardView("ns", TOPO, pods, [pooler(n) for n in ("p-a", "p-b", "p-c")])
    log = logging.getLogger("test-settle")
    ctx = SimpleNamespace(clock=lambda: 1796256000.0 + waited, log=log,
                          config=SimpleNamespace(primary_drain_settle_s=30.0))
    with caplog.at_level(logging.WARNING, logger="test-settle"):
        assert _settling(ctx, view, pods[0], sync("p-b")) == expected  # type: ignore[arg-type]
    assert any("goes on with standbys not streaming" in r.message for r in caplog.records) is warned
