"""The MultigresShard status: kstatus conditions (Ready, Reconciling, Stalled) plus the seed's fields
(seed 000 "Status Aggregation"; contract §3.7/§3.8). Pure: computed from the observation and the plan.

A refused spec (invalid, or a change the live objects cannot follow, such as storage below a grown
PVC) is reported for the generation that was refused: `observedGeneration` = that generation,
Ready=False, Reconciling=False, Stalled=True and ConfigurationValid=False with the reason, phase
Degraded. GitOps health (gitops/argocd/health.lua, gitops/flux/shards.yaml) first waits for
`observedGeneration` to catch up, so without it a refusal would look like progress forever.

Conditions keep their lastTransitionTime while their status stays the same, so an unchanged shard
produces an identical status and the engine writes nothing. Events that describe a change of
state (PoolEmpty, ScaleDownBlocked) are emitted when the matching condition changes.

The status is built as the typed model (spec/model.py MultigresShardStatus, the one the CRD's status
schema is generated from) and turned into the wire dict by model.status_to_dict alone: a misspelt
field or a wrong type fails here (mypy for the keyword arguments, pydantic at construction) instead
of at the API server. What the agent reports in annotations (backup state, switchover state) is read
with spec/reader.py: a report that does not fit the model is left out, as unreadable JSON is.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any, Literal

from ..core import keys
from ..core.conditions import MESSAGE_MAX
from ..core.manifest import Manifest
from ..plan import tls_policy
from ..plan.actions import Action, event
from ..plan.shard import Plan
from ..requirements_guard import runtime_requirements
from ..state import bootstrap, drain_annotations, drill, facts, ownership
from ..state.desired import Desired
from ..state.observed import Observed
from . import clone as clone_status
from . import fencing, pod_stuck, stalls

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ..spec import reader
    from ..spec.model import (
        BackupStatus,
        CloneStatus,
        Condition,
        DrillStatus,
        MultigresShardStatus,
        PgBackRestTLSStatus,
        RestoreStatus,
        SwitchoverStatus,
        status_to_dict,
    )

C = keys.ShardCondition
Phase = Literal["Progressing", "Healthy", "Degraded"]  # the phases the engine writes (model: MultigresShardStatus)


def _condition(ctype: str, ok: bool, reason: str, message: str) -> Condition:
    return Condition(type=ctype, status="True" if ok else "False", reason=reason, message=message[:MESSAGE_MAX])


def _typed(condition: Manifest) -> Condition:
    """A condition built by another status module (as a dict, like core.conditions.shard_condition)."""
    return Condition.model_validate(condition, strict=True)


def _pool_pods(observed: Observed) -> list[Manifest]:
    return [p for p in observed.pods if not facts.is_terminating(p)]


def _counts_ready(pod: Manifest) -> bool:
    """Seed 000: terminating and draining pods are excluded from ready counts."""
    return (facts.condition_true(pod, "Ready") and not facts.is_terminating(pod)
            and not drain_annotations.read_state(facts.annotations(pod)).active)


def _writable_standby(pods: list[Manifest]) -> Condition:
    """WritableStandby repeats the agent's readiness gate: a pod whose PostgreSQL is out of recovery
    while another pooler leads (agent/recovery_gate.py)."""
    found = [(facts.name(p), c) for p in pods if (c := facts.condition(p, keys.POD_READINESS_GATE) or {})
             and c.get("status") == "False"]
    if not found:
        return _condition(C.WRITABLE_STANDBY, False, "AllInRecoveryOrLeading", "")
    return _condition(C.WRITABLE_STANDBY, True, "OutOfRecovery",
                      "; ".join(c.get("message") or name for name, c in sorted(found))[:MESSAGE_MAX])


def _no_primary(pods: list[Manifest]) -> str:
    """Why the shard has no writable primary although the agent has published a role on every serving
    pod and none is PRIMARY ("" otherwise): multiorch has not elected one (a failover under way, or one
    it will never start, as after a restore whose rule names another shard's cohort). Pods without a
    role yet (no agent, or before its first pass) say nothing either way."""
    serving = [p for p in pods if facts.labels(p).get(keys.LABEL_ROLE) != keys.Role.DRAINED]
    if not serving or any(facts.labels(p).get(keys.LABEL_ROLE) in (None, keys.Role.PRIMARY) for p in serving):
        return ""
    return (f"no primary: the agent reads all {len(serving)} serving pool pods as REPLICA in the topology, so "
            "nothing accepts writes until multiorch elects one (docs/operations.md, \"No primary\")")


def _bootstrap_refused(desired: Desired, observed: Observed, pods: list[Manifest]) -> Condition:
    """BootstrapRefused: pods whose repository check holds PostgreSQL back (state/bootstrap.py)."""
    guard = desired.bootstrap
    return _typed(bootstrap.condition(guard, bootstrap.guard_evidence(guard, observed), pods))


def _orch_ready(observed: Observed) -> bool:
    for dep in observed.others.get("Deployment", ()):
        if facts.labels(dep).get(keys.LABEL_APP_COMPONENT) != keys.COMPONENT_MULTIORCH:
            continue
        want = (dep.get("spec") or {}).get("replicas", 1)
        if (dep.get("status") or {}).get("readyReplicas", 0) < want:
            return False
    return True


def _empty_pools(desired: Desired, observed: Observed) -> list[str]:
    ready: dict[tuple[str, str], int] = {}
    for pod in observed.pods:
        if _counts_ready(pod):
            key = (facts.labels(pod).get(keys.LABEL_POOL, ""), facts.labels(pod).get(keys.LABEL_CELL, ""))
            ready[key] = ready.get(key, 0) + 1
    return [f"{p.pool}/{p.cell}" for p in desired.pools if p.replicas > 0 and not ready.get((p.pool, p.cell))]


def _unreadable_verdict(problem: str) -> tuple[Condition, None, None]:
    return Condition(type=C.BACKUP_HEALTHY, status="Unknown", reason="UnreadableReport",
                     message=f"annotation {keys.ANN_BACKUP_HEALTH} {problem}"), None, None


def _backup_condition(cr: Manifest | None) -> tuple[Condition | None, str | None, str | None]:
    """The agent's verdict (JSON in an annotation on the CR): {"healthy", "reason", "message",
    "lastBackupTime", "lastBackupType"}; with the newest backup's time and type when it names them."""
    raw = facts.annotations(cr).get(keys.ANN_BACKUP_HEALTH) if cr else None
    if not raw:
        return None, None, None
    try:
        verdict = json.loads(raw)
    except ValueError:
        return _unreadable_verdict("is not JSON")
    if not isinstance(verdict, dict):
        return _unreadable_verdict("is not the agent's verdict")
    healthy = bool(verdict.get("healthy"))
    reason = verdict.get("reason") or ("BackupRecent" if healthy else "BackupStale")
    message = verdict.get("message", "")
    if not isinstance(reason, str) or not isinstance(message, str):  # the API server would refuse the status
        return _unreadable_verdict("is not the agent's verdict")
    when, kind = (value if isinstance(value := verdict.get(k), str) and value else None
                  for k in ("lastBackupTime", "lastBackupType"))
    return _condition(C.BACKUP_HEALTHY, healthy, reason, message), when, kind


def _backup_state(cr: Manifest | None) -> BackupStatus | None:
    """status.backup: the agent's bookkeeping (JSON in an annotation on the CR), when it is readable."""
    return reader.parse(BackupStatus, facts.json_annotation(cr, keys.ANN_BACKUP_STATE))


def _with_drills(backup: BackupStatus | None, rec: dict[str, Any]) -> BackupStatus | None:
    """status.backup with the engine's record of restore drills (plan/drill.py, drill.record) added."""
    if not rec:
        return backup
    out = backup or BackupStatus()
    out.drill = reader.parse(DrillStatus, {k: v for k, v in rec.items() if k != "lastVerified"})
    if rec.get("lastVerified"):
        out.last_verified = str(rec["lastVerified"])
    return out


def _drill_condition(rec: dict[str, Any]) -> Condition | None:
    """BackupVerified: the last drill's result (drill.record); absent before any drill ended."""
    last = rec.get("last")
    if not isinstance(last, dict) or last.get("result") not in tuple(keys.DrillResult):
        return None
    verified = last["result"] == keys.DrillResult.VERIFIED
    what = f"restore drill of backup {last.get('backupId')}" if last.get("backupId") else "restore drill"
    return _condition(C.BACKUP_VERIFIED, verified, str(last.get("reason") or last["result"]),
                      f"{what} at {last.get('finishedAt', '?')}: {last.get('message', '')}")


def _switchover(observed: Observed) -> SwitchoverStatus | None:
    """status.switchover: the engine's last decision on a switchover request (plan/switchover.py) and
    how far it got: InProgress while the old primary's pod exists, Completed once another pod leads."""
    state = facts.json_annotation(observed.cr, keys.ANN_SWITCHOVER_STATE)
    if state is None:
        return None
    out = {k: v for k, v in state.items() if k != "fromUid"}
    if state.get("decision") == "Refused":
        return reader.parse(SwitchoverStatus, out | {"state": "Refused"})
    leader = next((p for p in observed.pods if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY
                   and not facts.is_terminating(p)), None)
    if leader is None or any(facts.uid(p) == state.get("fromUid") for p in observed.pods):
        return reader.parse(SwitchoverStatus, out | {"state": "InProgress"})
    return reader.parse(SwitchoverStatus, out | {"state": "Completed", "primary": facts.name(leader)})


def _restore(pods: list[Manifest]) -> RestoreStatus | None:
    restore = bootstrap.restore_status(pods).get("restore")
    return RestoreStatus.model_validate(restore, strict=True) if restore else None


INVALID_SPEC = "InvalidSpec"  # the reason of Ready, Reconciling and Stalled when the spec is refused


def _refusal_conditions(errors: list[str]) -> list[Condition]:
    text = "; ".join(errors)[:MESSAGE_MAX]
    return [_condition(C.READY, False, INVALID_SPEC, text),
            _condition(C.RECONCILING, False, INVALID_SPEC, "waiting for a spec change"),
            _condition(C.STALLED, True, INVALID_SPEC, text),
            _condition(C.CONFIGURATION_VALID, False, "Invalid", text)]


def refused(previous: Manifest, errors: list[str], generation: int | None, stamp: str) -> Manifest:
    """The status of a spec that cannot even be rendered: the refusal conditions over the previous
    status, whose other fields (pods, roles, and fields this version does not know) still describe
    the pods that keep running."""
    status = reader.read_status(previous)
    conditions = {c.type: c for c in status.conditions}
    for cond in _refusal_conditions(errors):
        if generation is not None:
            cond.observed_generation = generation
        conditions[cond.type] = cond
    status.phase, status.message, status.conditions = "Degraded", errors[0], list(conditions.values())
    if generation is not None:
        status.observed_generation = generation
    return _written(status, previous, stamp)


def compute(desired: Desired, observed: Observed, result: Plan, *, config_errors: list[str] | None = None,
            stamp: str, agent_stall_after_s: float = stalls.DEFAULT_AGENT_STALL_AFTER_S) -> Manifest:
    errors = list(config_errors or []) + result.errors
    pods = _pool_pods(observed)
    ready = sum(_counts_ready(p) for p in pods)
    total = sum(p.replicas for p in desired.pools)
    empty = _empty_pools(desired, observed)
    orch_ready = _orch_ready(observed)
    pools_ready = total > 0 and ready == total and len(pods) == total + sum(
        facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.DRAINED for p in pods)
    now = facts.parse_time(stamp) or dt.datetime.now(dt.UTC)
    stuck = _typed(pod_stuck.condition(pods, now))
    writable_standby = _writable_standby(pods)
    refused = _bootstrap_refused(desired, observed, pods)
    rolling = result.rolling
    busy = bool(result.actions or result.waiting or result.withheld)
    headless = _no_primary(pods)
    # Paused: what the engine holds back leads the message (plan/pause.py).
    notes = ([result.pause_message] if result.paused else []) + result.waiting + ([headless] if headless else [])

    if errors or "True" in (stuck.status, writable_standby.status, refused.status) or (empty and total):
        phase: Phase = "Degraded"
    elif (pools_ready and orch_ready and not headless and not rolling.in_progress
          and not result.maintenance.in_progress and not busy):
        phase = "Healthy"
    else:
        phase = "Progressing"

    available = (_condition(C.AVAILABLE, False, "PoolEmpty", f"no ready replica in {', '.join(empty)}") if empty
                 else _condition(C.AVAILABLE, ready == total, "AllPodsReady" if ready == total else "NotAllPodsReady",
                                 f"{ready}/{total} pods ready"))
    progress = [
        _condition(C.READY, phase == "Healthy", phase, f"{ready}/{total} pods ready"),
        _condition(C.RECONCILING, busy, "Progressing" if busy else "Converged",
                   (notes or [a.describe() for a in result.actions] or ["up to date"])[0]),
        _condition(C.STALLED, False, "NotStalled", ""),
        _condition(C.CONFIGURATION_VALID, True, "Valid", ""),
    ]
    verdict = {c.type: c for c in (_refusal_conditions(errors) if errors else progress)}
    conditions = [
        verdict[C.READY], verdict[C.RECONCILING], verdict[C.STALLED],
        available,
        _condition(C.ROLLING_UPDATE, rolling.in_progress, "PodsDrifted" if rolling.in_progress else "PodsUpToDate",
                   rolling.progress),
        _condition(C.SCALE_DOWN_BLOCKED, bool(result.blocked), "HealthGate" if result.blocked else "NotBlocked",
                   "; ".join(result.blocked)),
        verdict[C.CONFIGURATION_VALID],
        _condition(C.DRAIN_ANNOTATIONS_VALID, not result.unknown_drains,
                   "UnknownDrainState" if result.unknown_drains else "Valid", "; ".join(result.unknown_drains)),
        _condition(C.DECOMMISSION_VALID, not result.decommission_problems,
                   "UnknownPod" if result.decommission_problems else "Valid", "; ".join(result.decommission_problems)),
        _condition(C.WAITING_FOR_MAINTENANCE_WINDOW, bool(result.deferred),
                   "OutsideMaintenanceWindow" if result.deferred else "NothingDeferred", "; ".join(result.deferred)),
        _condition(C.FOREIGN_OBJECTS, bool(observed.foreign), "LabelsWithoutOwnership" if observed.foreign
                   else "NoneFound", (ownership.describe(observed.foreign) + ": they carry this shard's labels but "
                                      "not its ownership, and are ignored") if observed.foreign else ""),
        _condition(C.PAUSED, result.paused is not None, result.paused.reason if result.paused else "NotPaused",
                   result.pause_message[:MESSAGE_MAX]),
    ]
    conditions += map(_typed, stalls.conditions(observed.pods, observed.cr, now, agent_stall_after_s))
    conditions += [stuck, writable_standby, refused, _typed(bootstrap.restoring_condition(pods))]
    conditions += map(_typed, fencing.conditions(desired, observed.pods))
    backup, last_backup_time, last_backup_type = _backup_condition(observed.cr)
    if backup is not None:
        conditions.append(backup)
    drills = drill.record(observed.cr)
    if (verified := _drill_condition(drills)) is not None:
        conditions.append(verified)
    cloned = clone_status.status(desired.clone_from, observed.cr)
    if (cloning := clone_status.condition(cloned)) is not None:
        conditions.append(_typed(cloning))
    generation = facts.meta(observed.cr).get("generation") if observed.cr else None
    for cond in conditions:
        if generation is not None:
            cond.observed_generation = generation
    status = MultigresShardStatus(
        phase=phase, message=errors[0] if errors else (notes[0] if notes else f"{ready}/{total} pods ready"),
        readyReplicas=ready, poolsReady=pools_ready, orchReady=orch_ready,
        cells=sorted({facts.labels(p).get(keys.LABEL_CELL, "") for p in pods} - {""}), conditions=conditions,
    )
    # The optional fields are set only when present: the wire dict holds the fields that were set.
    if last_backup_time:
        status.last_backup_time = last_backup_time
    if last_backup_type:
        status.last_backup_type = last_backup_type
    if (backup_state := _with_drills(_backup_state(observed.cr), drills)) is not None:
        status.backup = backup_state
    if (switchover := _switchover(observed)) is not None:
        status.switchover = switchover
    if (restore := _restore(pods)) is not None:
        status.restore = restore
    if cloned is not None:
        status.clone = CloneStatus.model_validate(cloned, strict=True)
    roles = {facts.name(p): facts.labels(p)[keys.LABEL_ROLE] for p in pods if facts.labels(p).get(keys.LABEL_ROLE)}
    if roles:  # left out when empty: server-side apply turns a map emptied of its applied keys into null
        status.pod_roles = roles  # (kubernetes#135841), which the CRD refuses; leaving it out removes it
    tls = _tls_status(desired, observed)
    if tls:
        status.pgbackrest_tls = PgBackRestTLSStatus.model_validate(tls, strict=True)
    if generation is not None:
        status.observed_generation = generation
    return _written(status, (observed.cr or {}).get("status") or {}, stamp)


def _tls_status(desired: Desired, observed: Observed) -> Manifest | None:
    gen = desired.generated_tls
    if gen is None:
        return None
    return tls_policy.status(gen, observed.find("Secret", gen.ca_secret), observed.find("Secret", gen.tls_secret),
                             observed.pods)


def carry_transition_times(status: MultigresShardStatus, previous: Manifest, stamp: str) -> None:
    """lastTransitionTime moves only when a condition's status changes. `previous` is the status as
    read from the API server: only each condition's type, status and time are needed, and reading
    them from the dict spares parsing the whole previous status on every pass."""
    before = {c.get("type"): c for c in previous.get("conditions") or [] if isinstance(c, dict)}
    for cond in status.conditions:
        old = before.get(cond.type) or {}
        same = old.get("status") == cond.status and old.get("lastTransitionTime")
        cond.last_transition_time = old["lastTransitionTime"] if same else stamp


def _written(status: MultigresShardStatus, previous: Manifest, stamp: str) -> Manifest:
    """The status as the engine writes it, its transition times carried over from `previous`."""
    carry_transition_times(status, previous, stamp)
    return status_to_dict(status)


def changed(previous: Manifest | None, status: Manifest) -> bool:
    if previous is None:
        return True
    dropped = bool(previous.get("podRoles")) and "podRoles" not in status  # see compute
    return dropped or any(previous.get(k) != v for k, v in status.items())


def transition_events(cr: Manifest, previous: Manifest, status: Manifest) -> list[Action]:
    """Warnings that fire when their condition turns True (or Available turns to PoolEmpty)."""
    before = {c.get("type"): c for c in previous.get("conditions") or []}
    now = {c["type"]: c for c in status["conditions"]}
    out = []
    blocked = now[C.SCALE_DOWN_BLOCKED]
    if blocked["status"] == "True" and (before.get(C.SCALE_DOWN_BLOCKED) or {}).get("status") != "True":
        out.append(event(cr, "Warning", C.SCALE_DOWN_BLOCKED, blocked["message"]))
    available = now[C.AVAILABLE]
    if available["reason"] == "PoolEmpty" and (before.get(C.AVAILABLE) or {}).get("message") != available["message"]:
        out.append(event(cr, "Warning", "PoolEmpty", available["message"]))
    drains, was = now.get(C.DRAIN_ANNOTATIONS_VALID) or {}, before.get(C.DRAIN_ANNOTATIONS_VALID) or {}
    if drains.get("status") == "False" and was.get("message") != drains["message"]:
        out.append(event(cr, "Warning", "UnknownDrainState", drains["message"]))
    bad, was_bad = now.get(C.DECOMMISSION_VALID) or {}, before.get(C.DECOMMISSION_VALID) or {}
    if bad.get("status") == "False" and was_bad.get("message") != bad["message"]:
        out.append(event(cr, "Warning", "DecommissionIgnored", bad["message"]))
    out += _stall_events(cr, before, now)
    foreign, was_foreign = now.get(C.FOREIGN_OBJECTS) or {}, before.get(C.FOREIGN_OBJECTS) or {}
    if foreign.get("status") == "True" and was_foreign.get("message") != foreign["message"]:
        out.append(event(cr, "Warning", C.FOREIGN_OBJECTS, foreign["message"]))
    paused, was_paused = now.get(C.PAUSED) or {}, (before.get(C.PAUSED) or {}).get("status") == "True"
    if paused.get("status") == "True" and not was_paused:
        out.append(event(cr, "Warning" if paused["reason"] != "Paused" else "Normal", "Paused", paused["message"]))
    elif paused.get("status") == "False" and was_paused:
        out.append(event(cr, "Normal", "Resumed", f"annotation {keys.ANN_PAUSED} lifted: writes resume"))
    return out


def _message(message: str) -> object:
    return message


# Condition type -> the reason of the Normal event when it clears, and what of its message names the
# stuck things (a warning repeats only when that changes). Only the operator sees AgentStalled and
# PodsStuck; the agent itself reports DrainStalled and TopologyUnreachable with events when they change.
# PodsStuck names pods and containers: its waiting reasons alternate (ErrImagePull, ImagePullBackOff)
# on every retry, which is no news.
_CLEARED: dict[str, tuple[str, Callable[[str], object]]] = {
    keys.ShardCondition.AGENT_STALLED: ("AgentProgressing", _message),
    keys.ShardCondition.PODS_STUCK: ("PodsUnstuck", pod_stuck.subjects),
    keys.ShardCondition.BOOTSTRAP_REFUSED: ("BootstrapAllowed", bootstrap.subjects),
}


def _stall_events(cr: Manifest, before: dict[Any, Manifest], now: dict[str, Manifest]) -> list[Action]:
    """A warning when a stall condition turns True or names something else; a normal event when it clears."""
    out = []
    for ctype, (cleared, names) in _CLEARED.items():
        cond, was = now.get(ctype) or {}, before.get(ctype) or {}
        if cond.get("status") == "True" and (was.get("status") != "True"
                                             or names(was.get("message") or "") != names(cond["message"])):
            out.append(event(cr, "Warning", ctype, cond["message"]))
        elif cond.get("status") == "False" and was.get("status") == "True":
            out.append(event(cr, "Normal", cleared, f"{ctype} cleared: {cond.get('reason')}"))
    return out
