"""A clone's first primary (agent/clone_election.py): the pure decision over the poolers' Status answers
(real v0.1.0 messages, read through dataplane/v0_1.restored_pooler), what era A says, and the change
and the Status reads on the wire (real gRPC servers on 127.0.0.1)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, NoReturn

import grpc
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent import clone_election as ce
from multigres_pools.agent.context import ShardView
from multigres_pools.agent.kube import now_rfc3339
from multigres_pools.dataplane.base import (
    DataPlaneError,
    Leadership,
    Orchestrator,
    Pooler,
    PoolerId,
    RefusalReason,
    RuleChange,
    ShardTopology,
    VersionMismatch,
)
from multigres_pools.dataplane.certified_rule import Restored
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.dataplane.v0_1 import ORCH, V0_1, restored_pooler
from multigres_pools.proto.gen.v0_1 import clustermetadata_pb2 as cm
from multigres_pools.proto.gen.v0_1 import multiorchdata_pb2 as mod
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from tests.helpers import v01_pooler

E = keys.ElectionState
T0 = 1_795_000_000.0
SOURCE_RULE = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=1, leader_subterm=1),
                           leader_id=cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name="p-source1"),
                           cohort_members=[cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=n)
                                           for n in ("p-source1", "p-source2", "p-source3")])
NAMES = ("p-clone0", "p-clone1", "p-clone2")


def shard(clone: str | None = keys.CloneState.COPIED, election: dict[str, Any] | None = None) -> dict[str, Any]:
    anns = {}
    if clone is not None:
        anns[keys.ANN_CLONE] = json.dumps({"source": "db/orders", "state": clone})
    if election is not None:
        anns[keys.ANN_CLONE_ELECTION] = json.dumps(election)
    return {"metadata": {"name": "orders-clone", "namespace": "db", "uid": "u-1", "annotations": anns}}


def pooler(name: str, stopped: bool = False) -> Pooler:
    return Pooler(PoolerId("zone1", name), None if stopped else keys.Role.REPLICA, f"{name}.pods", 15270,
                  "postgres", "default", "0-inf", f"/poolers/{name}/Pooler", stopped=stopped)


def status(name: str, lsn: str = "0/7000000", *, replica: bool = True, running: bool = True,
           rule: cm.ShardRule | None = SOURCE_RULE, revoked: int = 0) -> Restored:
    """A pooler's Status as v0.1.0 sends it after restoring the copy, read as the agent reads it."""
    response = mpd.StatusResponse()
    response.status.pooler_type = cm.REPLICA if replica else cm.PRIMARY
    response.status.postgres_running = running
    if rule is not None:
        response.consensus_status.current_position.rule.CopyFrom(rule)
        response.consensus_status.current_position.lsn = lsn
    response.consensus_status.term_revocation.revoked_below_term = revoked
    return restored_pooler(pooler(name), response)


def pods(*names: str) -> list[ce.LivePod]:
    return [ce.LivePod(f"pod-{n}", pooler(n)) for n in names]


def answers(*lsns: str, **kw: Any) -> dict[PoolerId, Restored | DataPlaneError]:
    return {PoolerId("zone1", n): status(n, lsn, **kw) for n, lsn in zip(NAMES, lsns, strict=False)}


def decide(cr: dict[str, Any], election: dict[str, Any] | None = None, live: list[ce.LivePod] | None = None,
           said: dict[PoolerId, Restored | DataPlaneError] | None = None, primary: PoolerId | None = None,
           previous: ce.Reading | None = None, now: float = T0) -> ce.Decision:
    return ce.decide(cr, election or {}, pods(*NAMES) if live is None else live,
                     answers("0/7000000", "0/7000000", "0/6FFFFF8") if said is None else said,
                     primary, previous, now)


def test_a_shard_that_is_no_clone_or_whose_copy_is_not_done_is_left_alone() -> None:
    for cr in (shard(None), shard(keys.CloneState.COPYING), shard(keys.CloneState.FAILED)):
        assert not ce.pending(cr, {})
        assert decide(cr) == ce.Decision()
    assert not ce.pending(None, {})


def test_elected_is_terminal() -> None:
    election = {"state": E.ELECTED, "leader": "zone1_p-clone0"}
    assert not ce.pending(shard(election=election), election)
    assert decide(shard(), election, primary=None) == ce.Decision()


def test_a_primary_of_the_shard_own_cohort_is_recorded_as_elected_without_a_call() -> None:
    got = decide(shard(), {"state": E.WAITING, "message": "x"}, primary=PoolerId("zone1", "p-clone1"))
    assert got.record is not None and not got.elect
    assert got.record["state"] == E.ELECTED and got.record["leader"] == "zone1_p-clone1"
    assert got.reading is None


@pytest.mark.parametrize(("live", "said", "reason"), [
    ([], {}, "no pool pod"),
    ([ce.LivePod("pod-p-clone0", None)], {}, "pod pod-p-clone0 has no pooler registered"),
    ([ce.LivePod("pod-p-clone0", pooler("p-clone0", stopped=True))], {}, "announced its shutdown"),
    (pods("p-clone0"), {PoolerId("zone1", "p-clone0"): DataPlaneError(RefusalReason.POOLER_UNREACHABLE, "refused")},
     "did not answer: refused"),
    (pods("p-clone0"), {PoolerId("zone1", "p-clone0"): status("p-clone0", running=False)}, "not a running REPLICA"),
    (pods("p-clone0"), {PoolerId("zone1", "p-clone0"): status("p-clone0", replica=False)}, "not a running REPLICA"),
    (pods("p-clone0"), {PoolerId("zone1", "p-clone0"): status("p-clone0", rule=None)}, "no rule"),
])
def test_it_waits_and_says_for_what(live: list[ce.LivePod], said: dict[PoolerId, Restored | DataPlaneError],
                                    reason: str) -> None:
    got = decide(shard(), live=live, said=said)
    assert got.record is not None and got.record["state"] == E.WAITING and reason in got.record["message"]
    assert not got.elect and got.reading is None


def test_a_rule_that_names_the_shard_own_poolers_is_not_an_inherited_one() -> None:
    own = cm.ShardRule(rule_number=cm.RuleNumber(coordinator_term=2),
                       cohort_members=[cm.ID(component=cm.ID.MULTIPOOLER, cell="zone1", name=n) for n in NAMES])
    got = decide(shard(), said=answers("0/8000000", "0/8000000", "0/8000000", rule=own))
    assert got.record is not None and "not an inherited cohort" in got.record["message"]


def test_the_same_reason_is_written_once() -> None:
    first = decide(shard(), live=[])
    assert first.record is not None
    assert decide(shard(), first.record, live=[], now=T0 + 5).record is None


def test_it_elects_only_once_the_highest_position_stayed_put_for_the_settle_time() -> None:
    first = decide(shard())
    assert first.record is not None and first.record["state"] == E.WAITING and not first.elect
    assert first.reading == ce.Reading(0x7000000, T0)
    # The replay goes on: the position moved, so the clock starts again.
    moved = decide(shard(), first.record, said=answers("0/7100000", "0/7000000", "0/7000000"),
                   previous=first.reading, now=T0 + 5)
    assert moved.record is None and not moved.elect and moved.reading == ce.Reading(0x7100000, T0 + 5)
    said = answers("0/7100000", "0/7100000", "0/7000000")
    early = decide(shard(), first.record, said=said, previous=moved.reading, now=T0 + 5 + ce.SETTLE_S - 0.5)
    assert not early.elect and early.reading == moved.reading
    ready = decide(shard(), first.record, said=said, previous=moved.reading, now=T0 + 5 + ce.SETTLE_S)
    assert ready.record is None and ready.attempt == 0
    assert [p.name for p in ready.elect] == list(NAMES) and ready.elect[0].rule == SOURCE_RULE


def test_a_failed_attempt_stays_on_record_and_the_next_one_goes_one_further() -> None:
    reading = ce.Reading(0x7000000, T0)
    failure = ce.failed("attempt 0 through multiorch zone1/orch-a failed: UNKNOWN: pre-vote failed", 0, "t")
    assert failure == {"state": E.FAILED, "message": failure["message"], "attempt": 0, "at": "t"}
    # Waiting does not overwrite it (the message says what failed) ...
    assert decide(shard(), failure, live=[]).record is None
    # ... and the retry is attempt 1: certified_rule.plan raises the term past the refused one.
    retry = decide(shard(), failure, previous=reading, now=T0 + 10)
    assert retry.elect and retry.attempt == 1
    # Not before the back-off since the failure: 5 s after attempt 0, doubling, at most 300 s.
    at = now_rfc3339(T0 + 10)
    for attempt, delay in ((0, 5.0), (1, 10.0), (3, 40.0), (9, 300.0)):
        recent = ce.failed("refused", attempt, at)
        early = decide(shard(), recent, previous=reading, now=T0 + 10 + delay - 0.5)
        assert early == ce.Decision(reading=reading), (attempt, early)
        due = decide(shard(), recent, previous=reading, now=T0 + 10 + delay)
        assert due.elect and due.attempt == attempt + 1, (attempt, due)
    assert ce.next_attempt({"state": E.FAILED, "attempt": 4}) == 5 and ce.next_attempt({}) == 0
    # A Waiting record keeps the count of attempts already made.
    waiting = ce.decide(shard(), {"state": E.WAITING, "message": "old", "attempt": 1}, [], {}, None, None, T0).record
    assert waiting is not None and waiting["attempt"] == 1


def test_the_elected_record_says_what_was_installed() -> None:
    change = RuleChange(2, PoolerId("zone1", "p-clone0"), "0/7000000", (1, 1))
    record = ce.elected(change, "db/orders", 0, "2026-11-29T07:00:00Z")
    assert {k: record[k] for k in ("state", "term", "leader", "frozenLsn", "outgoingRule", "at")} == {
        "state": E.ELECTED, "term": 2, "leader": "zone1_p-clone0", "frozenLsn": "0/7000000", "outgoingRule": "1/1",
        "at": "2026-11-29T07:00:00Z"}
    assert "db/orders" in record["message"]


def test_the_status_is_read_with_its_stored_revocation() -> None:
    got = status("p-clone0", "0/7000000", revoked=3)
    assert (got.cell, got.name, got.replica, got.lsn, got.revoked_below) == ("zone1", "p-clone0", True, "0/7000000", 3)
    assert got.rule is not None and got.rule.rule_number.leader_subterm == 1


def test_era_a_cannot_clone() -> None:
    plane = EraA()
    try:
        with pytest.raises(VersionMismatch, match=r"needs Multigres v0\.1\.0"):
            plane.restored([pooler("p-clone0")])
    finally:
        plane.close()


# --- the wire: a real gRPC multiorch and pooler on 127.0.0.1 ---------------------------------------------------
def _multiorch(reply: Callable[[mod.ApplyCertifiedRuleChangeRequest, grpc.ServicerContext],
                               mod.ApplyCertifiedRuleChangeResponse]) -> tuple[grpc.Server, int]:
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(ORCH.strip("/"), {
        "ApplyCertifiedRuleChange": grpc.unary_unary_rpc_method_handler(
            reply, mod.ApplyCertifiedRuleChangeRequest.FromString,
            mod.ApplyCertifiedRuleChangeResponse.SerializeToString)})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


TOPO = ShardTopology(("127.0.0.1:2379",), "/multigres/clone", "postgres", "default", "0-inf", ("zone1",))


def test_the_change_goes_to_one_multiorch_as_its_own_coordinator() -> None:
    received: list[mod.ApplyCertifiedRuleChangeRequest] = []

    def apply(request: mod.ApplyCertifiedRuleChangeRequest, context: grpc.ServicerContext,
              ) -> mod.ApplyCertifiedRuleChangeResponse:
        received.append(request)
        return mod.ApplyCertifiedRuleChangeResponse()

    server, port = _multiorch(apply)
    plane = V0_1(rpc_timeout=3)
    orch = Orchestrator("zone1", "clone-multiorch-zone1-abc-1", "127.0.0.1", port)
    try:
        change = plane.certified_rule_change(
            TOPO, orch, [status(n, lsn) for n, lsn in zip(NAMES, ("0/7000000", "0/7000000", "0/6FFFFF8"), strict=True)],
            durability="AT_LEAST_2", reason="clone of db/orders (multigres.pools)",
            now=dt.datetime(2026, 11, 29, 7, 0, tzinfo=dt.UTC), attempt=1)
    finally:
        plane.close()
        server.stop(None)
    assert change == RuleChange(3, PoolerId("zone1", "p-clone0"), "0/7000000", (1, 1))
    (sent,) = received
    me = cm.ID(component=cm.ID.MULTIORCH, cell="zone1", name=orch.name)
    assert sent.proposed_rule.coordinator_id == me == sent.cert.term_revocation.accepted_coordinator_id
    key, policy = sent.shard_key, sent.proposed_rule.durability_policy
    assert (key.database, key.table_group, key.shard) == ("postgres", "default", "0-inf")
    assert (policy.policy_name, policy.quorum_type, policy.required_count) == (
        "AT_LEAST_2", cm.QUORUM_TYPE_AT_LEAST_N, 2)
    assert sent.reason == "clone of db/orders (multigres.pools)"


def test_a_refused_change_is_a_data_plane_error_naming_the_multiorch() -> None:
    def refuse(request: mod.ApplyCertifiedRuleChangeRequest, context: grpc.ServicerContext) -> NoReturn:
        context.abort(grpc.StatusCode.UNKNOWN, "pre-vote failed: no nodes could accept the proposed revocation")
        raise AssertionError("abort raises")

    server, port = _multiorch(refuse)
    plane = V0_1(rpc_timeout=3)
    try:
        with pytest.raises(DataPlaneError, match="orch-1: UNKNOWN: pre-vote failed") as refused:
            plane.certified_rule_change(TOPO, Orchestrator("zone1", "orch-1", "127.0.0.1", port),
                                        [status("p-clone0")], durability="AT_LEAST_2", reason="r",
                                        now=dt.datetime(2026, 11, 29, tzinfo=dt.UTC), attempt=0)
        assert refused.value.reason is RefusalReason.UNKNOWN
        with pytest.raises(DataPlaneError) as unreachable:  # the server is gone
            server.stop(None).wait()
            plane.apply_certified_rule_change(Orchestrator("zone1", "orch-1", "127.0.0.1", port),
                                              mod.ApplyCertifiedRuleChangeRequest())
        assert unreachable.value.reason is RefusalReason.ORCHESTRATOR_UNREACHABLE
    finally:
        plane.close()
        server.stop(None)


def test_each_pooler_status_is_read_as_a_restored_pooler() -> None:
    response = v01_pooler.answer("p-clone0", "p-source1", mpd.POSTGRES_STATUS_STANDBY)
    response.status.pooler_type = cm.REPLICA
    response.status.postgres_running = True
    response.consensus_status.current_position.lsn = "0/7000000"
    server, port = v01_pooler.serve(response)
    plane = V0_1(rpc_timeout=3, dial_host=lambda host: "127.0.0.1")
    try:
        ((asked, got),) = plane.restored([Pooler(PoolerId("zone1", "p-clone0"), keys.Role.REPLICA, "p-clone0.hl",
                                                 port, "postgres", "default", "0-inf", "/k")])
    finally:
        plane.close()
        server.stop(None)
    assert isinstance(got, Restored) and got.replica and got.lsn == "0/7000000" and asked.id.name == "p-clone0"
    assert got.rule is not None and got.rule.leader_id.name == "p-source1"


# --- the step in the pass: what it writes and tells (plain stand-ins for the Kubernetes and data-plane edges) ----
class _Kube:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.events: list[tuple[str, bool]] = []

    def patch_shard_annotations(self, shard: dict[str, Any], annotations: dict[str, str]) -> None:
        self.records.append(json.loads(annotations[keys.ANN_CLONE_ELECTION]))

    def event(self, obj: dict[str, Any], reason: str, message: str, warning: bool = False) -> None:
        self.events.append((reason, warning))


def test_the_step_waits_then_fails_then_elects_with_the_next_attempt() -> None:
    kube, clock, sent = _Kube(), [T0], []
    effects: list[str] = []
    refusals = [DataPlaneError(RefusalReason.UNKNOWN, "pre-vote failed")]

    def change(topo: ShardTopology, orch: Orchestrator, poolers: list[Restored], **kw: Any) -> RuleChange:
        sent.append((orch.name, kw["attempt"], kw["durability"], kw["reason"]))
        if refusals:
            raise refusals.pop()
        return RuleChange(3, PoolerId("zone1", "p-clone0"), "0/7000000", (1, 1))

    poolers = [pooler(n) for n in NAMES]
    plane = SimpleNamespace(
        confirms_leader=True, leadership=lambda poolers: Leadership(None, None),
        restored=lambda asked: [(p, status(p.id.name)) for p in asked],
        orchestrators=lambda topo, names: [Orchestrator("zone1", f"orch-{i}", "10.0.0.9", 15370) for i in (0, 1)],
        certified_rule_change=change)
    ctx = SimpleNamespace(kube=kube, clock=lambda: clock[0], effect=effects.append, log=logging.getLogger("test"))
    step = ce.CloneElections(ctx)  # type: ignore[arg-type]

    def run(cr: dict[str, Any]) -> None:
        view = ShardView("db", TOPO, [{"metadata": {"name": n}} for n in NAMES], poolers, shard=cr,
                         dataplane=plane)  # type: ignore[arg-type]
        step.step(view)

    cr = shard()
    run(cr)
    assert [r["state"] for r in kube.records] == [E.WAITING] and not sent
    clock[0] += ce.SETTLE_S
    run(cr)  # the manifest read before our write: the agent's memory counts
    assert sent == [("orch-0", 0, "AT_LEAST_2", "clone of db/orders (multigres.pools)")]
    assert kube.records[-1]["state"] == E.FAILED and kube.events == [("CloneElectionFailed", True)]
    clock[0] += 5
    run(cr)
    assert sent[-1][:2] == ("orch-1", 1)  # one further, through the other multiorch
    assert kube.records[-1] == {**kube.records[-1], "state": E.ELECTED, "term": 3, "leader": "zone1_p-clone0",
                                "outgoingRule": "1/1", "attempt": 1}
    assert kube.events[-1] == ("CloneElected", False)
    assert effects.count("certified-rule-change") == 2
    written = len(kube.records)
    run(cr)
    assert len(kube.records) == written and len(sent) == 2  # Elected is terminal


def test_the_step_costs_nothing_on_a_shard_that_is_no_clone() -> None:
    ctx = SimpleNamespace(kube=None, clock=None, effect=None, log=None)
    view = ShardView("db", TOPO, [], None, shard=shard(None), dataplane=None)
    ce.CloneElections(ctx).step(view)  # type: ignore[arg-type]  # touches neither edge
    ce.CloneElections(ctx).step(ShardView("db", TOPO, [], None))  # type: ignore[arg-type]  # no MultigresShard
