"""One reconcile pass of one shard: spec -> model -> render -> observe -> plan -> apply -> status.

Shared by the `shard_reconcile` module, the operator and the benchmark, so every entry point runs
the same engine. The spec comes from vars (a spec mapping or a whole MultigresShard document) or
from a MultigresShard read from the cluster.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import keys, naming
from ..core.manifest import Manifest
from ..kube import observe, owned_reads, snapshot
from ..kube.apply import Applier, Outcome, write_status
from ..kube.client import KubeClient
from ..kube.snapshot import Reader
from ..plan import shard as planner
from ..plan.actions import Action
from ..plan.delete import CLEANUP_TIMEOUT
from ..render import shard as render
from ..render import spechash
from ..requirements_guard import runtime_requirements
from ..spec.policy import SpecPolicy
from ..state import claims, facts
from ..state.desired import Desired
from ..state.observed import Observed, kinds_to_list, with_writes
from ..status import pod_stuck, stalls
from ..status import shard as shard_status
from . import task_result

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ..spec import inputs, model
    from ..spec import security as model_security
    from . import clone_source

_VOLATILE = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")


@dataclass(frozen=True)
class Request:
    namespace: str | None = None
    spec: Mapping[str, Any] | None = None  # vars mode: the spec of a MultigresShard
    definition: Mapping[str, Any] | None = None  # vars mode: a whole MultigresShard document
    name: str | None = None  # CR mode: read this MultigresShard from the cluster
    state: str = "present"
    check_mode: bool = False
    diff: bool = False
    cleanup_timeout: float = CLEANUP_TIMEOUT
    # Recorded list answers (`snapshot.load`) replayed instead of listing; None lists live.
    observed: Mapping[str, list[dict[str, Any]]] | None = None
    # Seconds a pod may wait for the agent before AgentStalled; None: $MULTIGRES_POOLS_AGENT_STALL_AFTER
    # or the default (status/stalls.py), so the operator and the playbook runs it starts agree.
    agent_stall_after: float | None = None
    # Under the Ansible Operator: end the pass with one read by name per owned kind (kube/owned_reads.py).
    read_owned_by_name: bool = False

    def stall_after(self) -> float:
        return self.agent_stall_after if self.agent_stall_after is not None else stalls.configured_agent_stall_after()
    # The operator's allow-lists for images, ServiceAccounts and Secrets (spec/policy.py); empty allows all.
    policy: SpecPolicy = field(default_factory=SpecPolicy)
    # Where other MultigresShards may claim this one's topology or S3 repository (state/claims.py): the
    # operator's namespaces, ("*",) for every one; empty: the shard's own namespace.
    claim_namespaces: tuple[str, ...] = ()


@dataclass
class Result:
    changed: bool = False
    failed: bool = False
    msg: str = ""
    errors: list[str] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    requeue_after: float = 0.0
    status: Manifest | None = None
    finished: bool = False
    requests: dict[str, int] = field(default_factory=dict)
    writes: int = 0
    seconds: float = 0.0
    replayed: int = 0  # list answers taken from the operator's snapshot instead of the API
    diff: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The task result (task_result.TaskResult), by its one builder."""
        return task_result.build(**self.__dict__)


def _load(request: Request, cr: Manifest | None) -> tuple[model.MultigresShardSpec, str]:
    if cr is not None:
        return model.load_spec(cr.get("spec") or {}), facts.meta(cr).get("namespace") or request.namespace or ""
    if request.definition is not None:
        doc = model.load_shard(request.definition)
        namespace = doc.metadata.namespace or request.namespace
        if not namespace:
            raise model.SpecError(["metadata.namespace: required (or pass `namespace`)"])
        return doc.spec, namespace
    if not request.namespace:
        raise model.SpecError(["namespace: required with `spec`"])
    return model.load_spec(request.spec or {}), request.namespace


def request_problems(request: Request) -> list[str]:
    """Everything wrong with the arguments themselves, before any API request: object names (they
    become URL paths), the timeout, and in vars mode the spec or document (limits, then the model)."""
    problems = []
    for field_name, value, type_ in (("namespace", request.namespace, model.DnsLabel),
                                     ("name", request.name, model_security.ObjectName)):
        problem = model.value_problem(type_, value) if value is not None else None
        if problem:
            problems.append(f"{field_name}: {value!r}: {problem}")
    timeout = request.cleanup_timeout
    finite = isinstance(timeout, int | float) and not isinstance(timeout, bool) and math.isfinite(timeout)
    if not (finite and timeout >= 0):
        problems.append(f"cleanup_timeout: {timeout!r}: must be a finite number of seconds, 0 or more")
    try:
        stall = request.stall_after()
    except ValueError as exc:
        problems.append(str(exc))
    else:
        if not (isinstance(stall, int | float) and math.isfinite(stall) and stall > 0):
            problems.append(f"agent_stall_after: {stall!r}: must be a positive number of seconds")
    for field_name, data, load in (("shard", request.definition, model.load_shard),
                                   ("spec", request.spec, model.load_spec)):
        if data is None:
            continue
        try:
            inputs.check_data(data, field_name)
            load(data)
        except inputs.InputError as exc:
            problems.append(str(exc))
        except model.SpecError as exc:
            problems += list(exc.errors)
    return problems


def _config_hash(client: Reader, spec: model.MultigresShardSpec, namespace: str) -> str:
    ref = spec.postgres_config_ref
    if ref is None:
        return ""
    cm = client.get("v1", "ConfigMap", namespace, ref.name)
    value = ((cm or {}).get("data") or {}).get(ref.key)
    if value is None:
        raise model.SpecError([f"spec.postgresConfigRef: ConfigMap {ref.name} has no key {ref.key!r}"])
    return spechash.config_hash(value)


def _clean(obj: Manifest | None) -> Manifest:
    if not obj:
        return {}
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE}
    return out


def _diffs(observed: Observed, outcomes: list[Outcome], lines: list[str]) -> list[dict[str, str]]:
    import yaml

    out = [{"prepared": "\n".join(lines) + "\n"}]
    for outcome in outcomes:
        action = outcome.action
        if action.verb == "event":
            continue
        before = _clean(observed.find(action.kind, action.name) or (observed.cr if action.kind == keys.SHARD_KIND
                                                                    else None))
        after = {} if action.verb in ("delete", "prune") else _clean(outcome.after)
        out.append({"before_header": f"{action.kind}/{action.name}", "after_header": f"{action.kind}/{action.name}",
                    "before": yaml.safe_dump(before, sort_keys=True) if before else "",
                    "after": yaml.safe_dump(after, sort_keys=True) if after else ""})
    return out


@dataclass
class Decision:
    """What one pass would do, decided without writing anything: the plan, and the status to write
    (None when it is unchanged or no MultigresShard drives the pass)."""

    result: Result
    cr: Manifest | None
    namespace: str = ""
    observed: Observed | None = None
    plan: planner.Plan | None = None
    status: Manifest | None = None
    events: list[Action] = field(default_factory=list)
    invalid: bool = False
    desired: Desired | None = None
    now: dt.datetime | None = None

    @property
    def writes(self) -> bool:
        """Whether carrying this decision out sends any write request."""
        return bool(self.plan is not None and not self.invalid and self.plan.actions) or self.status is not None


def decide(reader: Reader, request: Request, cr: Manifest | None, now: dt.datetime) -> Decision:
    """Spec -> render -> observe -> plan -> status, reading through `reader` and writing nothing.

    The operator calls this on its watch caches to learn whether a shard needs a playbook run;
    `run_pass` calls it on the live client (or a snapshot) and then carries the decision out."""
    stamp = facts.format_time(now)
    result = Result()
    try:
        spec, namespace = _load(request, cr)
        refused = request.policy.problems(spec)
        if refused:
            raise model.SpecError(refused)
        owner = {"name": facts.name(cr), "uid": facts.uid(cr) or ""} if cr else None
        project_ref = facts.annotations(cr).get(keys.ANN_PROJECT_REF) if cr else None
        desired = render.desired_state(spec, namespace, owner=owner, project_ref=project_ref,
                                       referenced_config_hash=_config_hash(reader, spec, namespace),
                                       clone_source=clone_source.read(reader, spec, namespace, cr))
    except model.SpecError as exc:
        result.failed, result.errors, result.msg = True, list(exc.errors), str(exc)
        return _invalid(Decision(result, cr, request.namespace or ""), stamp)

    # While a MultigresShard is deleted its generated Secrets are left out: they carry its
    # ownerReference, so the garbage collector removes them once the finalizer is released and the
    # operator needs no delete on Secrets (docs/install.md). Without a CR nothing owns them.
    deleting_cr = cr is not None and (request.state == "absent" or facts.is_terminating(cr))
    observed = observe.observe(reader, desired.shard, namespace, cr=cr,
                               kinds=kinds_to_list(desired.objects),
                               metadata_kinds=[("v1", "Secret")] if desired.observes_secrets and not deleting_cr
                               else [], drill_pod=_drill_pod_name(desired, cr),
                               clone_pod=desired.clone.pod_name if desired.clone else None)
    plan = planner.plan(desired, observed, now, delete=request.state == "absent",
                        cleanup_timeout=request.cleanup_timeout)
    # After the planner: a copy with the same object names is its ownership rivalry (plan.errors).
    if cr is not None and not deleting_cr and not plan.errors and _claims_to_check(cr, observed):
        taken = claims.conflicts(cr, _claimants(reader, request.claim_namespaces, namespace))
        if taken:
            result.failed, result.errors, result.msg = True, taken, "\n".join(taken)
            return _invalid(Decision(result, cr, namespace), stamp)
    result.plan, result.waiting, result.requeue_after = plan.lines(), plan.waiting, plan.requeue_after
    result.finished = plan.finished
    decision = Decision(result, cr, namespace, observed, plan, desired=desired, now=now)
    if plan.errors:
        result.failed, result.errors = True, plan.errors
        result.msg = "invalid change:\n" + "\n".join(f"  - {e}" for e in plan.errors)
        decision.invalid = True
        if cr is not None and not plan.deleting:  # refused for this generation: GitOps must see it
            _set_status(decision, cr, shard_status.compute(desired, observed, plan, stamp=stamp,
                                                           agent_stall_after_s=request.stall_after()))
        return decision
    # A paused deletion still reports: status is the only place that says why the finalizer waits.
    if cr is not None and (not plan.deleting or plan.paused):
        _set_status(decision, cr, shard_status.compute(desired, observed, plan, stamp=stamp,
                                                       agent_stall_after_s=request.stall_after()), with_events=True)
        # Decided again when a pod's wait for the agent, or a container's start, crosses its threshold,
        # even if nothing changes.
        recheck = min((s for s in (stalls.recheck_after(observed.pods, now, request.stall_after()),
                                   pod_stuck.recheck_after(observed.pods, now)) if s), default=0.0)
        if recheck and not (0 < result.requeue_after <= recheck):
            result.requeue_after = recheck
    return decision


def _claims_to_check(cr: Manifest, observed: Observed) -> bool:
    """Whether to look for an older claimant of the shard's topology and repository: before its first
    pool pod (a new shard, or every pod lost) and for a spec not yet reconciled (an edit may name another
    shard's, and stays refused until it changes). A running shard's claim stands; looking on every pass
    would list every shard each time."""
    valid = facts.condition(cr, keys.ShardCondition.CONFIGURATION_VALID)
    return (not observed.pods or (valid is not None and valid.get("status") == "False")
            or facts.meta(cr).get("generation") != (cr.get("status") or {}).get("observedGeneration"))


def _claimants(reader: Reader, namespaces: tuple[str, ...], own: str) -> list[Manifest]:
    if claims.ALL_NAMESPACES in namespaces:
        return reader.list(keys.API_GROUP_VERSION, keys.SHARD_KIND, None)
    return [s for ns in dict.fromkeys((own, *namespaces)) for s in reader.list(keys.API_GROUP_VERSION,
                                                                               keys.SHARD_KIND, ns)]


def _drill_pod_name(desired: Desired, cr: Manifest | None) -> str | None:
    """The restore drill pod's name when the shard has drills or a record of one (plan/drill.py)."""
    if desired.drill is None and (cr is None or keys.ANN_RESTORE_DRILL not in facts.annotations(cr)):
        return None
    return naming.restore_drill_pod_name(desired.shard)


def execute(client: KubeClient, request: Request, decision: Decision, stamp: str) -> Result:
    """Carry a decision out: the planned actions, then the status and its transition events."""
    result = decision.result
    outcomes: list[Outcome] = []
    if decision.plan is not None and not decision.invalid:
        outcomes = Applier(client, decision.namespace, dry_run=request.check_mode, stamp=stamp).run(
            decision.plan.actions)
        result.actions = [o.as_dict() for o in outcomes]
        result.changed |= any(o.result == "done" and o.action.verb != "event" for o in outcomes)
        failed = [o for o in outcomes if o.result == "failed"]
        if failed:
            result.failed = True
            result.msg = f"{failed[0].action.describe()} failed: {failed[0].message}"
    if outcomes and not request.check_mode:
        _status_after(request, decision, outcomes)
    if decision.cr is not None and decision.status is not None:
        write_status(client, decision.cr, decision.status, dry_run=request.check_mode)
        if decision.events and not request.check_mode:
            Applier(client, decision.namespace, dry_run=False, stamp=stamp).run(decision.events)
    if request.diff and decision.observed is not None and not decision.invalid:
        result.diff = _diffs(decision.observed, outcomes, result.plan)
    return result


def _status_after(request: Request, decision: Decision, outcomes: list[Outcome]) -> None:
    """The status as the next pass will see it: planned again (pure) on the observation with this
    pass's writes applied (the API server's answers). A status computed before the writes would
    describe a state that no longer exists, and the next pass would spend a write correcting it."""
    cr, plan, desired, now = decision.cr, decision.plan, decision.desired, decision.now
    if cr is None or plan is None or plan.deleting or desired is None or now is None or decision.observed is None:
        return
    after = with_writes(decision.observed, [(o.action.verb, o.action.kind, o.action.name, o.after)
                                            for o in outcomes if o.result == "done"])
    replanned = planner.plan(desired, after, now, cleanup_timeout=request.cleanup_timeout)
    if replanned.errors or replanned.deleting:
        return
    _set_status(decision, cr, shard_status.compute(desired, after, replanned, stamp=facts.format_time(now),
                                                   agent_stall_after_s=request.stall_after()),
                with_events=True)


def run_pass(client: KubeClient, request: Request, now: dt.datetime | None = None) -> Result:
    started = time.perf_counter()
    now = now or dt.datetime.now(dt.UTC)
    result = Result()
    cr = None
    problems = request_problems(request)
    if problems:
        result.failed, result.errors = True, problems
        result.msg = "invalid arguments:\n" + "\n".join(f"  - {e}" for e in problems)
        return _finish(result, client, started)
    if request.name:
        if not request.namespace:
            raise ValueError("namespace is required with name")
        cr = observe.read_shard(client, request.namespace, request.name)
        if cr is None:
            result.msg = f"MultigresShard {request.namespace}/{request.name} not found"
            result.finished = request.state == "absent"
            result.failed = request.state != "absent"
            return _finish(result, client, started)
        if request.state == "absent" and not facts.is_terminating(cr):
            # Deleting a MultigresShard is deleting the CR: its finalizer then drives the cleanup.
            client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, request.namespace, request.name,
                          uid=facts.uid(cr), dry_run=request.check_mode)
            cr = observe.read_shard(client, request.namespace, request.name) if not request.check_mode else cr
            result.changed = True
            if cr is None:
                result.finished = True
                return _finish(result, client, started)
    # The CR is always read live (above); a snapshot only stands in for the lists of its objects.
    reader: Reader = client if request.observed is None else snapshot.Replay(client, request.observed)
    decision = decide(reader, request, cr, now)
    decision.result.changed |= result.changed
    out = execute(client, request, decision, facts.format_time(now))
    out.replayed = getattr(reader, "replayed", 0)
    if request.read_owned_by_name and cr is not None and decision.observed is not None and decision.desired:
        owned_reads.read_one_of_each_kind(client, decision.namespace, decision.observed, decision.desired.objects,
                                          facts.uid(cr) or "")
    return _finish(out, client, started)


def _invalid(decision: Decision, stamp: str) -> Decision:
    """A spec that cannot be rendered: no child object is touched; the CR's status says why."""
    decision.invalid = True
    cr = decision.cr
    if cr is not None:
        _set_status(decision, cr, shard_status.refused(cr.get("status") or {}, decision.result.errors,
                                                       facts.meta(cr).get("generation"), stamp))
    return decision


def _set_status(decision: Decision, cr: Manifest, status: Manifest, *, with_events: bool = False) -> None:
    """Report `status`; it is written (with its transition events, if asked) only when it differs from
    the CR's. A refusal sends no transition events: its conditions say why."""
    decision.result.status = status
    previous = cr.get("status") or {}
    changed = shard_status.changed(previous, status)
    decision.status = status if changed else None
    decision.events = shard_status.transition_events(cr, previous, status) if changed and with_events else []


def _finish(result: Result, client: KubeClient, started: float) -> Result:
    result.requests = dict(client.counts)
    result.writes = client.writes
    result.seconds = round(time.perf_counter() - started, 4)
    return result
