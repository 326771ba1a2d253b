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

from . import facts, inputs, keys, model, observe, render, spechash
from . import plan as planner
from . import status as shard_status
from .apply import Applier, Outcome, write_status
from .kube import KubeClient
from .plan_delete import CLEANUP_TIMEOUT

Manifest = dict[str, Any]
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
    diff: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "diff"}
        if self.diff:
            out["diff"] = self.diff
        return out


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
                                     ("name", request.name, model.ObjectName)):
        problem = model.value_problem(type_, value) if value is not None else None
        if problem:
            problems.append(f"{field_name}: {value!r}: {problem}")
    timeout = request.cleanup_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not (math.isfinite(timeout)
                                                                                  and timeout >= 0):
        problems.append(f"cleanup_timeout: {timeout!r}: must be a finite number of seconds, 0 or more")
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


def _config_hash(client: KubeClient, spec: model.MultigresShardSpec, namespace: str) -> str:
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


def _diffs(observed: observe.Observed, outcomes: list[Outcome], lines: list[str]) -> list[dict[str, str]]:
    import yaml

    out = [{"prepared": "\n".join(lines) + "\n"}]
    for outcome in outcomes:
        action = outcome.action
        if action.verb == "event":
            continue
        before = _clean(observed.find(action.kind, action.name) or (observed.cr if action.kind == keys.SHARD_KIND
                                                                    else None))
        after = {} if action.verb == "delete" else _clean(outcome.after)
        out.append({"before_header": f"{action.kind}/{action.name}", "after_header": f"{action.kind}/{action.name}",
                    "before": yaml.safe_dump(before, sort_keys=True) if before else "",
                    "after": yaml.safe_dump(after, sort_keys=True) if after else ""})
    return out


def run_pass(client: KubeClient, request: Request, now: dt.datetime | None = None) -> Result:
    started = time.perf_counter()
    now = now or dt.datetime.now(dt.UTC)
    stamp = facts.format_time(now)
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
    try:
        spec, namespace = _load(request, cr)
        owner = {"name": facts.name(cr), "uid": facts.uid(cr) or ""} if cr else None
        project_ref = facts.annotations(cr).get(keys.ANN_PROJECT_REF) if cr else None
        desired = render.desired_state(spec, namespace, owner=owner, project_ref=project_ref,
                                       referenced_config_hash=_config_hash(client, spec, namespace))
    except model.SpecError as exc:
        result.failed, result.errors, result.msg = True, list(exc.errors), str(exc)
        if cr is not None:
            _report_invalid(client, request, cr, result, stamp)
        return _finish(result, client, started)

    observed = observe.observe(client, desired.shard, namespace, cr=cr,
                               kinds=observe.kinds_to_list(desired.objects),
                               metadata_kinds=[("v1", "Secret")] if desired.observes_secrets else [])
    plan = planner.plan(desired, observed, now, delete=request.state == "absent",
                        cleanup_timeout=request.cleanup_timeout)
    result.plan, result.waiting, result.requeue_after = plan.lines(), plan.waiting, plan.requeue_after
    result.finished = plan.finished
    if plan.errors:
        result.failed, result.errors = True, plan.errors
        result.msg = "invalid change:\n" + "\n".join(f"  - {e}" for e in plan.errors)
        if cr is not None and not plan.deleting:  # refused for this generation: GitOps must see it
            _write_status(client, request, cr, shard_status.compute(desired, observed, plan, stamp=stamp), result)
        return _finish(result, client, started)

    outcomes = Applier(client, namespace, dry_run=request.check_mode, stamp=stamp).run(plan.actions)
    result.actions = [o.as_dict() for o in outcomes]
    result.changed |= any(o.result == "done" and o.action.verb != "event" for o in outcomes)
    failed = [o for o in outcomes if o.result == "failed"]
    if failed:
        result.failed = True
        result.msg = f"{failed[0].action.describe()} failed: {failed[0].message}"
    if cr is not None and not plan.deleting:
        previous = cr.get("status") or {}
        new = shard_status.compute(desired, observed, plan, stamp=stamp)
        if _write_status(client, request, cr, new, result) and not request.check_mode:
            Applier(client, namespace, dry_run=False, stamp=stamp).run(
                shard_status.transition_events(cr, previous, new))
    if request.diff:
        result.diff = _diffs(observed, outcomes, result.plan)
    return _finish(result, client, started)


def _write_status(client: KubeClient, request: Request, cr: Manifest, status: Manifest, result: Result) -> bool:
    """Report `status` on the CR when it changed; True if it was written."""
    result.status = status
    if not shard_status.changed(cr.get("status") or {}, status):
        return False
    write_status(client, cr, status, dry_run=request.check_mode)
    return True


def _report_invalid(client: KubeClient, request: Request, cr: Manifest, result: Result, stamp: str) -> None:
    """An invalid MultigresShard: no child object is touched; the CR's status says why."""
    status = shard_status.refused(cr.get("status") or {}, result.errors, facts.meta(cr).get("generation"), stamp)
    _write_status(client, request, cr, status, result)


def _finish(result: Result, client: KubeClient, started: float) -> Result:
    result.requests = dict(client.counts)
    result.writes = client.writes
    result.seconds = round(time.perf_counter() - started, 4)
    return result
