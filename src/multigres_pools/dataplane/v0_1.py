"""Multigres v0.1.0 data plane: ShardKey pooler records, consensus rules, INELIGIBLE standbys.

Facts (shared/reference/multigres-v0.1.md): record §3; Status, consensus Status and UpdateConsensusRule
§1.1-§1.3 (check order, CAS token, "rule conflict" as gRPC UNKNOWN); the primary recipe §1.2a (the
pooler whose consensus id is its current rule's leader, cross-checked with postgres_status PRIMARY);
INELIGIBLE via StopReplication with a receiver-stopping mode §2. The etcd side is shared with era A.

The request and response messages are our own `mgpools.v0_1.*` stubs (they must not collide with the
era-A `multipoolermanager*` symbols in the same process), so the fixed wire paths are named here and
called with `channel.unary_unary`; the backup messages are unchanged since era A and reused.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import grpc
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from ..proto.gen import clustermetadata_pb2 as cm_a
from ..proto.gen import multipoolermanagerdata_pb2 as backup_pb
from ..proto.gen.v0_1 import clustermetadata_pb2 as cm
from ..proto.gen.v0_1 import consensusdata_pb2 as cd
from ..proto.gen.v0_1 import multiorchdata_pb2 as mod
from ..proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd
from . import certified_rule
from .base import (
    Backup,
    DataPlaneError,
    Durability,
    Eligibility,
    Leadership,
    Orchestrator,
    Pooler,
    PoolerId,
    PoolerStatus,
    PostgresAction,
    RefusalReason,
    RuleChange,
    ShardTopology,
    StandbyState,
    Survey,
    SyncReplication,
    VersionMismatch,
)
from .etcd_topology import EtcdTopologyPlane, durability_policy

MANAGER = "/multipoolermanager.MultiPoolerManager/"
CONSENSUS = "/consensus.MultiPoolerConsensus/"
ORCH = "/multiorch.MultiOrchService/"
# One cycle polls every pooler (up to 0.5 s) and may run a whole election (Recruit, Propose, promote),
# or wait on a pooler that is going away. The cycle runs on in multiorch when the call times out, but
# a timed-out call cannot tell "received and still electing" from "never reached": on the real node
# under load an election took 5.2 s and every 3 s call timed out, so the agent reported multiorch as
# never asked. The deadline covers a loaded election; an unreachable multiorch still fails fast.
TRIGGER_TIMEOUT_S = 10.0
# ApplyCertifiedRuleChange returns once the new leader is promoted (Recruit, Propose, pg_promote): 2.5 s
# measured on a clone (tests/integration/multigres/repository/test_clone_on_multigres.py); a loaded
# node takes several times that.
CERTIFIED_CHANGE_TIMEOUT_S = 30.0

_ROLES = {cm.PRIMARY: keys.Role.PRIMARY, cm.REPLICA: keys.Role.REPLICA, cm.DRAINED: keys.Role.DRAINED}
_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
_ELIGIBILITY = {cm.COHORT_ELIGIBILITY_SIGNAL_ELIGIBLE: Eligibility.ELIGIBLE,
                cm.COHORT_ELIGIBILITY_SIGNAL_INELIGIBLE: Eligibility.INELIGIBLE}
# Era A's Status had a string in field 7 and a ConsensusTerm in field 9; v0.1.0 has an enum and nothing.
_ERA_A_STATUS_FIELDS = {7, 9}
_Response = TypeVar("_Response", bound=Message)
# What the server's rule store says when the CAS token is stale, or the row is locked (NOWAIT).
_CONFLICT_TEXTS = ("rule conflict", "could not obtain lock", "lock_not_available", "55p03")


def decode_pooler(key: str, raw: bytes) -> Pooler | None:
    """A v0.1.0 MultiPooler record, or None when the bytes are not one."""
    try:
        rec = cm.MultiPooler.FromString(raw)
    except DecodeError:
        return None
    # Graceful shutdown rewrites the record to DRAINED/NOT_SERVING (v0.1 §2): the pooler is gone for
    # now, its data is fine; multiorch's own DRAINED (pg_rewind infeasible) leaves serving_status as is.
    stopped = rec.type == cm.DRAINED and rec.serving_status == cm.NOT_SERVING
    return Pooler(
        id=PoolerId(rec.id.cell, rec.id.name),
        role=None if stopped else _ROLES.get(rec.type, keys.Role.REPLICA),
        hostname=rec.hostname,
        grpc_port=rec.port_map.get("grpc"),
        database=rec.shard_key.database,
        tablegroup=rec.shard_key.table_group,
        shard=rec.shard_key.shard,
        key=key,
        native=rec,
        stopped=stopped,
    )


def era_a_record_of(raw: bytes, topo: ShardTopology) -> str | None:
    """An era-A record (database/table_group/shard strings in fields 2-4) of this shard."""
    try:
        rec = cm_a.MultiPooler.FromString(raw)
    except DecodeError:
        return None
    if rec.id.cell in topo.cells and (rec.database, rec.table_group, rec.shard) == (
            topo.database, topo.tablegroup, topo.shard):
        return f"an era-A ({keys.MultigresVersion.ERA_A}) record (database string in field 2)"
    return None


def _pid(ident: cm.ID) -> PoolerId:
    return PoolerId(ident.cell, ident.name)


def _durability(policy: cm.DurabilityPolicy) -> Durability | None:
    if policy.required_count <= 0:
        return None
    return Durability(policy.required_count, multi_cell=policy.quorum_type == cm.QUORUM_TYPE_MULTI_CELL_AT_LEAST_N)


def is_leader(consensus: cm.ConsensusStatus) -> bool:
    """v0.1 §1.2a: the pooler's own id is the leader of its current rule (multiorch's IsLeader)."""
    leader = consensus.current_position.rule.leader_id
    return bool(consensus.id.name) and (consensus.id.cell, consensus.id.name) == (leader.cell, leader.name)


def _rule_number(response: mpd.StatusResponse) -> tuple[int, int]:
    number = response.consensus_status.current_position.rule.rule_number
    return number.coordinator_term, number.leader_subterm


_ACTIONS = {mpd.POSTGRES_ACTION_RESTORING_FROM_BACKUP: PostgresAction.RESTORING,
            mpd.POSTGRES_ACTION_CREATING_FIRST_BACKUP: PostgresAction.FIRST_BACKUP}
WAL_RECEIVER_STREAMING = "streaming"  # pg_stat_wal_receiver.status while WAL flows from the primary


def pick_leadership(answers: Sequence[tuple[Pooler, mpd.StatusResponse]]) -> Leadership:
    """multiorch's rule (StaleLeader: the highest coordinator term wins; a tie decides nothing) over
    the Status answers of a shard's poolers: the newest rule anyone reports names the leader, and that
    leader is confirmed only if it answered, leads that term itself and runs postgres as primary.

    A restarted old primary still leads its own, older rule and may briefly run postgres as primary
    (reference §1.2a); any pooler that follows the new leader reports a newer term and outvotes it.
    """
    writable = frozenset(p.id for p, r in answers if r.status.postgres_status == mpd.POSTGRES_STATUS_PRIMARY)
    in_recovery = frozenset(p.id for p, r in answers if r.status.postgres_status == mpd.POSTGRES_STATUS_STANDBY)
    streaming = frozenset(p.id for p, r in answers
                          if r.status.replication_status.wal_receiver_status == WAL_RECEIVER_STREAMING)
    actions = {p.id: _ACTIONS[r.status.postgres_action] for p, r in answers if r.status.postgres_action in _ACTIONS}
    positions = {p.id: (r.status.replication_status.last_replay_lsn or r.status.wal_position) for p, r in answers
                 if r.status.replication_status.last_replay_lsn or r.status.wal_position}
    down = {p.id: seconds for p, r in answers if (seconds := postgres_down_s(r.status)) is not None}
    unknown = Leadership(None, None, writable, in_recovery, streaming, actions, positions, down)
    ruled = [(p, r) for p, r in answers if r.consensus_status.current_position.rule.HasField("leader_id")]
    if not ruled:
        return unknown
    newest = max(_rule_number(r) for _, r in ruled)
    if newest[0] <= 0:
        return unknown
    rule = next(r for _, r in ruled if _rule_number(r) == newest).consensus_status.current_position.rule
    named = _pid(rule.leader_id)
    leaders = [p for p, r in ruled if is_leader(r.consensus_status) and _rule_number(r)[0] == newest[0]
               and p.id in writable]
    confirmed = leaders[0] if len(leaders) == 1 and leaders[0].id == named else None
    return Leadership(confirmed, named, writable, in_recovery, streaming, actions, positions, down)


def pooler_status(ident: PoolerId, address: str, answer: mpd.StatusResponse | DataPlaneError) -> PoolerStatus:
    """What the status screen shows of one Status answer (or of the failure to get one)."""
    if isinstance(answer, DataPlaneError):
        return PoolerStatus(ident, address, error=answer.message)
    status = answer.status
    if status.postgres_status == mpd.POSTGRES_STATUS_PRIMARY:
        return PoolerStatus(ident, address, primary=True, lsn=status.primary_status.lsn or status.wal_position)
    repl = status.replication_status
    return PoolerStatus(ident, address, lsn=repl.last_replay_lsn or status.wal_position,
                        received_lsn=repl.last_receive_lsn, starting_dead_s=starting_dead_s(status))


def starting_dead_s(status: mpd.Status) -> float:
    """Seconds the manager has been starting a PostgreSQL whose process is not running, else 0."""
    if status.postgres_action != mpd.POSTGRES_ACTION_STARTING or status.postgres_running:
        return 0.0
    return float(status.postgres_action_duration.ToTimedelta().total_seconds())


def postgres_down_s(status: mpd.Status) -> float | None:
    """None while PostgreSQL runs or a restore or first backup is under way (PostgreSQL is not meant
    to run then); else how long the manager says it has been starting it (0: not, or not known)."""
    if status.postgres_running or status.postgres_action in _ACTIONS:
        return None
    return starting_dead_s(status)


def _answered_leadership(answers: Sequence[tuple[Pooler, mpd.StatusResponse | DataPlaneError]]) -> Leadership:
    return pick_leadership([(p, r) for p, r in answers if isinstance(r, mpd.StatusResponse)])


def is_rule_conflict(code: grpc.StatusCode, text: str) -> bool:
    return code is grpc.StatusCode.UNKNOWN and any(t in text.lower() for t in _CONFLICT_TEXTS)


def classify_rpc_error(exc: grpc.RpcError, primary: bool = True) -> DataPlaneError:
    """Map v0.1.0's codes and texts (reference §1.3, manager guardrails) to stable refusal reasons.

    `primary` says whom we called: a failure to reach the draining pooler itself is not the primary's.
    """
    code, text = exc.code(), exc.details() or ""
    lowered = text.lower()
    if code is grpc.StatusCode.UNIMPLEMENTED:
        reason = RefusalReason.VERSION_MISMATCH
    elif code is grpc.StatusCode.UNAVAILABLE and "starting up" in lowered and primary:
        reason = RefusalReason.PRIMARY_NOT_READY
    elif code in _UNREACHABLE:
        reason = RefusalReason.PRIMARY_UNREACHABLE if primary else RefusalReason.POOLER_UNREACHABLE
    elif is_rule_conflict(code, text):
        reason = RefusalReason.RULE_CONFLICT
    elif code is grpc.StatusCode.INVALID_ARGUMENT and "durability policy" in lowered:
        reason = RefusalReason.DURABILITY_POLICY
    elif code is grpc.StatusCode.INVALID_ARGUMENT and "cannot be empty" in lowered:
        reason = RefusalReason.LAST_SYNC_STANDBY
    elif code is grpc.StatusCode.FAILED_PRECONDITION and "empty cohort" in lowered:
        reason = RefusalReason.SYNC_NOT_CONFIGURED
    elif code is grpc.StatusCode.FAILED_PRECONDITION and ("not in standby mode" in lowered
                                                         or "pooler type is" in lowered):
        reason = RefusalReason.NOT_A_REPLICA
    elif code is grpc.StatusCode.FAILED_PRECONDITION and "standby mode" in lowered:
        reason = RefusalReason.PRIMARY_IN_RECOVERY
    elif code is grpc.StatusCode.INVALID_ARGUMENT:
        reason = RefusalReason.INVALID_REQUEST
    else:
        reason = RefusalReason.UNKNOWN
    return DataPlaneError(reason, f"{code.name}: {text}")


def restored_pooler(pooler: Pooler, response: mpd.StatusResponse) -> certified_rule.Restored:
    """What a clone's pooler reports of its restore: the rule and position it recovered to, and the
    highest term it has already revoked (a retry must go past it)."""
    status, consensus = response.status, response.consensus_status
    position = consensus.current_position
    return certified_rule.Restored(
        cell=pooler.id.cell, name=pooler.id.name,
        replica=status.pooler_type == cm.REPLICA and status.postgres_running,
        rule=position.rule if position.HasField("rule") else None,
        lsn=position.lsn, revoked_below=consensus.term_revocation.revoked_below_term)


def coordinator_id(orch: Orchestrator) -> cm.ID:
    """The multiorch that runs the change: v0.1.0 recruits under this id (its --service-id, the pod name)."""
    return cm.ID(component=cm.ID.MULTIORCH, cell=orch.cell, name=orch.name)


def shard_key(topo: ShardTopology) -> cm.ShardKey:
    return cm.ShardKey(database=topo.database, table_group=topo.tablegroup, shard=topo.shard)


def policy_of(name: str) -> cm.DurabilityPolicy:
    """The policy exactly as the bootstrap registers it (etcd_topology.durability_policy), as v0.1.0's
    message: both schemas number these fields alike."""
    return cm.DurabilityPolicy.FromString(durability_policy(name).SerializeToString())


def check_status_schema(response: mpd.StatusResponse) -> None:
    """An era-A pooler answers Status on the same path; its field 7 is a string, which v0.1.0 reads as
    an unknown field (reference §3). Acting on such a status would be acting on garbage."""
    unknown = UnknownFieldSet(response.status)
    odd = {unknown[i].field_number for i in range(len(unknown))} & _ERA_A_STATUS_FIELDS
    if odd:
        raise VersionMismatch(f"Status carries era-A fields {sorted(odd)}: the pooler is not Multigres "
                              f"{keys.MultigresVersion.V0_1_0}")


def check_identity(pooler: Pooler, response: mpd.StatusResponse) -> None:
    """The pooler that answered is the one we asked: an address that now belongs to another pod (a
    reused pod IP, a stale DNS answer) must not lend its Status to this pooler."""
    answered = _pid(response.consensus_status.id)
    if answered.name and answered != pooler.id:
        raise DataPlaneError(RefusalReason.POOLER_UNREACHABLE, f"the address of {pooler.hostname}:"
                             f"{pooler.grpc_port} answered as pooler {answered}, not {pooler.id}")


class V0_1(EtcdTopologyPlane):
    version = keys.MultigresVersion.V0_1_0
    supports_eligibility = True
    confirms_leader = True
    supports_recovery_trigger = True
    cas_attempts = 6
    _pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
        super().close()

    def decode_pooler(self, key: str, raw: bytes) -> Pooler | None:
        return decode_pooler(key, raw)

    def foreign_record(self, raw: bytes, topo: ShardTopology) -> str | None:
        return era_a_record_of(raw, topo)

    # --- gRPC --------------------------------------------------------------------------------------
    def _call(self, pooler: Pooler, path: str, request: Message, response_type: type[_Response],
              primary: bool = True, timeout_s: float | None = None) -> _Response:
        unreachable = RefusalReason.PRIMARY_UNREACHABLE if primary else RefusalReason.POOLER_UNREACHABLE
        method = self._channel(pooler, unreachable).unary_unary(
            path, request_serializer=type(request).SerializeToString, response_deserializer=response_type.FromString)
        try:
            # response_type.FromString made it
            return cast(_Response, method(request, timeout=timeout_s or self._rpc_timeout))
        except grpc.RpcError as exc:
            raise classify_rpc_error(exc, primary) from exc

    def status(self, pooler: Pooler, primary: bool = True, timeout_s: float | None = None) -> mpd.StatusResponse:
        """The manager's Status (works before the manager is ready)."""
        response = self._call(pooler, MANAGER + "Status", mpd.StatusRequest(), mpd.StatusResponse, primary,
                              timeout_s)
        check_status_schema(response)
        check_identity(pooler, response)
        return response

    def consensus(self, pooler: Pooler) -> cd.StatusResponse:
        """The consensus service's Status: the pooler's id, current rule and availability."""
        return self._call(pooler, CONSENSUS + "Status", cd.StatusRequest(), cd.StatusResponse)

    def leader(self, poolers: Sequence[Pooler]) -> Pooler | None:
        return self.leadership(poolers).confirmed

    def leadership(self, poolers: Sequence[Pooler]) -> Leadership:
        """Asks every pooler that has not announced its shutdown, in parallel, and applies
        `pick_leadership`. The etcd type is not trusted: it is published asynchronously, and a
        restarted old primary keeps a PRIMARY record for tens of seconds (reference §1.2a)."""
        return _answered_leadership(self._status_round(poolers))

    def survey(self, poolers: Sequence[Pooler]) -> Survey:
        """`leadership` and what each pooler answered, from the same round (the status screen)."""
        answers = self._status_round(poolers)
        return Survey(_answered_leadership(answers),
                      tuple(pooler_status(p.id, self.dial_target(p), r) for p, r in answers))

    def _status_round(self, poolers: Sequence[Pooler]) -> list[tuple[Pooler, mpd.StatusResponse | DataPlaneError]]:
        """Status of every pooler that has not announced its shutdown, asked in parallel."""
        candidates = sorted((p for p in poolers if not p.stopped), key=lambda p: (p.id.cell, p.id.name))

        def ask(pooler: Pooler) -> tuple[Pooler, mpd.StatusResponse | DataPlaneError]:
            try:
                return pooler, self.status(pooler)
            except DataPlaneError as exc:
                return pooler, exc

        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="v01-status")
            pool = self._pool
        return list(pool.map(ask, candidates))

    def sync_replication(self, primary: Pooler) -> SyncReplication:
        response = self.status(primary)
        consensus, status = response.consensus_status, response.status
        if not is_leader(consensus) or status.postgres_status != mpd.POSTGRES_STATUS_PRIMARY:
            pg = mpd.PostgresStatus.Name(status.postgres_status)
            raise DataPlaneError(RefusalReason.PRIMARY_IN_RECOVERY, f"{primary.id} is not the primary "
                                 f"(postgres {pg}, leads its rule: {is_leader(consensus)})")
        rule = consensus.current_position.rule
        leader = _pid(rule.leader_id)
        cfg = status.primary_status.sync_replication_config
        return SyncReplication(
            ready=status.primary_status.ready,
            # The GUC quotes every cohort member, the primary too (reference §1.2a).
            standbys=tuple(p for p in map(_pid, cfg.standby_ids) if p != leader),
            connected=tuple(map(_pid, status.primary_status.connected_followers)),
            cohort=tuple(map(_pid, rule.cohort_members)),
            leader=leader,
            durability=_durability(rule.durability_policy),
        )

    def remove_standby(self, primary: Pooler, standby: PoolerId, native: Any = None) -> None:
        """UpdateConsensusRule REMOVE with the primary's current rule number as the CAS token.

        Re-reads the rule and retries on a rule conflict (gRPC UNKNOWN, reference §1.3 step 7); a
        standby that is no longer in the cohort is done without a call (the server would say OK too).
        """
        ident = cm.ID(component=cm.ID.MULTIPOOLER, cell=standby.cell, name=standby.name)
        last: DataPlaneError | None = None
        for attempt in range(self.cas_attempts):
            response = self.consensus(primary)
            if not response.consensus_status.HasField("current_position"):
                raise DataPlaneError(RefusalReason.PRIMARY_NOT_READY, f"{primary.id} publishes no current rule")
            rule = response.consensus_status.current_position.rule
            if not is_leader(response.consensus_status):
                raise DataPlaneError(RefusalReason.PRIMARY_IN_RECOVERY,
                                     f"{primary.id} does not lead its current rule (leader {_pid(rule.leader_id)})")
            if standby not in map(_pid, rule.cohort_members):
                return
            request = mpd.UpdateConsensusRuleRequest(
                operation=mpd.COHORT_UPDATE_OPERATION_REMOVE, standby_ids=[ident],
                expected_outgoing_rule=rule.rule_number)
            try:
                self._call(primary, CONSENSUS + "UpdateConsensusRule", request, mpd.UpdateConsensusRuleResponse)
                return
            except DataPlaneError as exc:
                if exc.reason is not RefusalReason.RULE_CONFLICT:
                    raise
                last = exc
                time.sleep(0.05 * 2**attempt)
        raise last or DataPlaneError(RefusalReason.RULE_CONFLICT, "no attempt made")

    # --- the standby itself ----------------------------------------------------------------------------
    def standby_state(self, pooler: Pooler, timeout_s: float | None = None) -> StandbyState:
        response = self.status(pooler, primary=False, timeout_s=timeout_s)
        repl = response.status.replication_status
        signal = response.availability_status.cohort_eligibility_status.signal
        return StandbyState(
            eligibility=_ELIGIBILITY.get(signal, Eligibility.UNKNOWN),
            replicating=bool(repl.primary_conn_info.host) and not repl.is_wal_replay_paused,
            is_leader=is_leader(response.consensus_status),
            knows_primary=bool(response.consensus_status.replication_primary.primary.host
                               and response.consensus_status.replication_primary.primary.postgres_port),
        )

    def make_ineligible(self, pooler: Pooler, timeout_s: float | None = None) -> None:
        """StopReplication(RECEIVER_ONLY): the pooler clears primary_conninfo and reports INELIGIBLE, so
        multiorch removes it from the cohort and never re-adds it; not persisted (a restart undoes it)."""
        if self.standby_state(pooler, timeout_s).eligibility is Eligibility.INELIGIBLE:
            return
        request = mpd.StopReplicationRequest(mode=mpd.REPLICATION_PAUSE_MODE_RECEIVER_ONLY, wait=True)
        self._call(pooler, MANAGER + "StopReplication", request, mpd.StopReplicationResponse, primary=False,
                   timeout_s=timeout_s)

    def make_eligible(self, pooler: Pooler) -> None:
        """StartReplication clears the manual stop; multiorch then reconnects it and adds it back."""
        self._call(pooler, MANAGER + "StartReplication", mpd.StartReplicationRequest(), mpd.StartReplicationResponse,
                   primary=False)

    # --- multiorch -------------------------------------------------------------------------------------
    def orchestrators(self, topo: ShardTopology, names: Mapping[str, str]) -> list[Orchestrator]:
        found = []
        for cell in sorted(set(topo.cells) & set(names)):
            store, root = self._cell_store(topo, cell)
            for key, raw in store.get_prefix(naming.orchestrators_prefix(root) + "/"):
                try:
                    record = cm.MultiOrch.FromString(raw)
                except DecodeError:
                    continue
                if key.endswith("/Orch") and record.id.cell == cell and record.id.name.startswith(names[cell]):
                    found.append(Orchestrator(cell, record.id.name, record.hostname, record.port_map.get("grpc")))
        return found

    def _orchestrate(self, orch: Orchestrator, method: str, request: Message, response_type: type[_Response],
                     timeout_s: float) -> _Response:
        """One call to a multiorch; a failure names it, unreachable or as v0.1.0's texts classify it."""
        unreachable = RefusalReason.ORCHESTRATOR_UNREACHABLE
        channel = self._channel_to(f"multiorch {orch.cell}/{orch.name}", orch.hostname, orch.grpc_port, unreachable)
        call = channel.unary_unary(ORCH + method, request_serializer=type(request).SerializeToString,
                                   response_deserializer=response_type.FromString)
        try:
            return cast(_Response, call(request, timeout=timeout_s))  # response_type.FromString made it
        except grpc.RpcError as exc:
            reason = unreachable if exc.code() in _UNREACHABLE else classify_rpc_error(exc).reason
            raise DataPlaneError(reason, f"multiorch {orch.name}: {exc.code().name}: {exc.details()}") from exc

    def trigger_recovery(self, orch: Orchestrator) -> tuple[str, ...]:
        """TriggerRecoveryNow(max_cycles=1): multiorch polls every pooler, expires its grace periods and
        runs one recovery cycle, so a primary that announced INELIGIBLE is replaced now (v0.1.0
        LeaderResigned fires at once, but its AppointLeader waits out the 4 s + 0-8 s failover grace)."""
        response = self._orchestrate(orch, "TriggerRecoveryNow", mod.TriggerRecoveryNowRequest(max_cycles=1),
                                     mod.TriggerRecoveryNowResponse, TRIGGER_TIMEOUT_S)
        return tuple(response.remaining_problem_codes)

    # --- a clone's first primary (certified_rule.py) -------------------------------------------------------
    def restored(self, poolers: Sequence[Pooler]) -> list[tuple[Pooler, certified_rule.Restored | DataPlaneError]]:
        return [(p, r if isinstance(r, DataPlaneError) else restored_pooler(p, r))
                for p, r in self._status_round(poolers)]

    def apply_certified_rule_change(self, orch: Orchestrator, request: mod.ApplyCertifiedRuleChangeRequest) -> None:
        """ApplyCertifiedRuleChange on `orch`, which must be the request's coordinator; blocks until the
        new leader is promoted. A timeout does not say whether the change happened: read the poolers."""
        self._orchestrate(orch, "ApplyCertifiedRuleChange", request, mod.ApplyCertifiedRuleChangeResponse,
                          CERTIFIED_CHANGE_TIMEOUT_S)

    def certified_rule_change(self, topo: ShardTopology, orch: Orchestrator, poolers: Sequence[certified_rule.Restored],
                              *, durability: str, reason: str, now: dt.datetime, attempt: int) -> RuleChange:
        try:
            request = certified_rule.plan(poolers, orchestrator=coordinator_id(orch), durability=policy_of(durability),
                                          shard_key=shard_key(topo), now=now, reason=reason, attempt=attempt)
        except ValueError as exc:
            raise DataPlaneError(RefusalReason.INVALID_REQUEST, str(exc)) from None
        self.apply_certified_rule_change(orch, request)
        rule, outgoing = request.proposed_rule, request.cert.term_revocation.outgoing_rule
        return RuleChange(rule.rule_number.coordinator_term, _pid(rule.leader_id), request.cert.frozen_lsn,
                          (outgoing.coordinator_term, outgoing.leader_subterm))

    # --- backups (messages unchanged since era A) -------------------------------------------------------
    def get_backups(self, primary: Pooler, limit: int) -> list[Backup]:
        response = self._call(primary, MANAGER + "GetBackups", backup_pb.GetBackupsRequest(limit=limit),
                              backup_pb.GetBackupsResponse)
        return [Backup(b.backup_id, b.status == backup_pb.BackupMetadata.COMPLETE, b.type, b.job_id,
                       b.backup_size_bytes, b.final_lsn) for b in response.backups]

    def take_backup(self, pooler: Pooler, backup_type: str, job_id: str, force_primary: bool = False,
                    timeout_s: float | None = None) -> str:
        request = backup_pb.BackupRequest(type=backup_type, job_id=job_id, force_primary=force_primary)
        return self._call(pooler, MANAGER + "Backup", request, backup_pb.BackupResponse,
                          timeout_s=timeout_s).backup_id
