"""Executes the drain decisions of `drain.py` for one pod, and the finalizer path of external deletions.

Every write and every state-changing data-plane call goes through `ctx.effect(...)` first, so tests
can stop the agent between any two side effects and prove that a fresh agent finishes the job.
"""

from __future__ import annotations

from datetime import datetime

from ansible_collections.multigres.pools.plugins.module_utils import keys
from ansible_collections.multigres.pools.plugins.module_utils.keys import DrainState

from ..dataplane.base import DataPlaneError
from . import podinfo
from .context import Context, Obj, ShardView
from .drain import Decision, Effect, Facts, Guard, Need, decide
from .kube import now_rfc3339

STALLED_CONDITION = "DrainStalled"
MAX_STEPS = 16


def _parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _force(pod: Obj) -> DrainState | None:
    value = podinfo.annotations(pod).get(keys.ANN_DRAIN_FORCE)
    try:
        return DrainState(value) if value else None
    except ValueError:
        return None


def primary_guard(view: ShardView, pod: Obj) -> Guard:
    primary = view.primary_other_than(pod)
    if primary is None:
        return Guard.NO_PRIMARY
    ppod = view.pod_for(primary)
    if ppod is None:
        return Guard.POD_MISSING
    if podinfo.deleting(ppod):
        return Guard.POD_TERMINATING
    if podinfo.drain_state(ppod) not in (None, DrainState.READY_FOR_DELETION):
        return Guard.POD_DRAINING
    if not podinfo.containers_ready(ppod):
        return Guard.POD_NOT_READY
    return Guard.OK


def _gather(ctx: Context, view: ShardView, pod: Obj, facts: Facts, need: Need) -> None:
    if need is Need.PRIMARY_GUARD:
        facts.guard = primary_guard(view, pod)
        return
    own = view.own(pod)
    target = own if facts.is_primary else view.primary_other_than(pod)
    try:
        sync = ctx.dataplane.sync_replication(target)
    except DataPlaneError as exc:
        facts.sync_error, facts.extra["message"] = exc.reason.value, exc.message
        return
    if facts.is_primary:
        facts.failover_target = any(s in sync.connected for s in sync.standbys)
    else:
        facts.listed = sync.lists(view.own_id(pod))


def _perform(ctx: Context, view: ShardView, pod: Obj, facts: Facts, effect: Effect) -> None:
    own, own_id = view.own(pod), view.own_id(pod)
    ctx.effect(effect.value)
    try:
        if effect is Effect.REMOVE_STANDBY:
            ctx.dataplane.remove_standby(view.primary_other_than(pod), own_id, own.native if own else None)
            facts.removal_done = True
        else:
            ctx.dataplane.unregister(view.topology, own_id)
            facts.unregistered = True
    except DataPlaneError as exc:
        facts.extra["message"] = exc.message
        if effect is Effect.REMOVE_STANDBY:
            facts.removal_error = exc.reason.value
        else:
            facts.unregister_error = exc.reason.value


def _since(pod: Obj, now: float) -> float:
    ann = podinfo.annotations(pod)
    return _parse_time(ann.get(keys.ANN_DRAIN_STATE_SINCE)) or _parse_time(ann.get(keys.ANN_DRAIN_REQUESTED_AT)) or now


def _write_state(ctx: Context, view: ShardView, pod: Obj, old: DrainState, d: Decision) -> Obj:
    now = ctx.clock()
    ann: dict[str, str | None] = {
        keys.ANN_DRAIN_STATE: d.state.value,
        keys.ANN_DRAIN_STATE_SINCE: now_rfc3339(now),
        keys.ANN_DRAIN_BLOCKED: None,
    }
    if d.forced:
        ann[keys.ANN_DRAIN_FORCE] = None  # one forced step per annotation, never a standing override
    ctx.effect(f"write:{d.state.value}")
    # The resourceVersion precondition stops us from reviving a drain the engine just cancelled.
    updated = ctx.kube.patch_pod_meta(pod, annotations=ann, precondition=True)
    ctx.metrics.drain_state_seconds.labels(old.value).observe(max(0.0, now - _since(pod, now)))
    name = podinfo.name(pod)
    ctx.log.info("drain state written", extra={"pod": name, "from": old.value, "to": d.state.value,
                                              "forced": d.forced})
    if d.forced:
        ctx.metrics.drain_forced.labels(old.value).inc()
        for target in view.event_targets(pod):
            ctx.kube.event(target, "DrainForced", f"{name}: step {old} forced by {keys.ANN_DRAIN_FORCE}; "
                           f"its proof was skipped", warning=True)
    if (view.namespace, name) in ctx.stalled:
        ctx.stalled.discard((view.namespace, name))
        ctx.metrics.drains_stalled.set(len(ctx.stalled))
        updated = ctx.kube.set_pod_condition(updated, STALLED_CONDITION, "False", "Progressing", f"now {d.state}")
    if d.state is DrainState.READY_FOR_DELETION:
        requested = _parse_time(podinfo.annotations(pod).get(keys.ANN_DRAIN_REQUESTED_AT))
        if requested is not None:
            ctx.metrics.drain_total_seconds.observe(max(0.0, now - requested))
        ctx.metrics.drains_completed.inc()
        for target in view.event_targets(pod):
            ctx.kube.event(target, "DrainCompleted", f"{name}: pooler left synchronous replication and the "
                           "topology; ready for deletion")
    return updated


def _block(ctx: Context, view: ShardView, pod: Obj, state: DrainState, reason: str, message: str) -> None:
    now, name = ctx.clock(), podinfo.name(pod)
    ann = podinfo.annotations(pod)
    patch: dict[str, str | None] = {}
    if ann.get(keys.ANN_DRAIN_BLOCKED) != reason:
        patch[keys.ANN_DRAIN_BLOCKED] = reason
    if not ann.get(keys.ANN_DRAIN_STATE_SINCE):
        patch[keys.ANN_DRAIN_STATE_SINCE] = now_rfc3339(now)
    text = f"{name}: drain cannot leave {state}: {reason}" + (f" ({message})" if message else "")
    if patch:
        ctx.effect("write:blocked")
        pod = ctx.kube.patch_pod_meta(pod, annotations=patch)
        if keys.ANN_DRAIN_BLOCKED in patch:
            ctx.metrics.drain_failures.labels(reason).inc()
            ctx.log.warning("drain blocked", extra={"pod": name, "state": state.value, "reason": reason,
                                                    "detail": message})
            for target in view.event_targets(pod):
                ctx.kube.event(target, "DrainBlocked", text, warning=True)
    stalled_for = now - _since(pod, now)
    if stalled_for >= ctx.config.stall_after_s and (view.namespace, name) not in ctx.stalled:
        ctx.stalled.add((view.namespace, name))
        ctx.metrics.drains_stalled.set(len(ctx.stalled))
        msg = (f"{text}; stalled for {int(stalled_for)}s. Fix the cause, or force this one step with "
               f"annotation {keys.ANN_DRAIN_FORCE}={state}")
        pod = ctx.kube.set_pod_condition(pod, STALLED_CONDITION, "True", reason, msg)
        for target in view.event_targets(pod):
            ctx.kube.event(target, STALLED_CONDITION, msg, warning=True)


def run_drain(ctx: Context, view: ShardView, pod: Obj) -> DrainState | None:
    """Advance one pod's drain as far as the proofs allow; returns the state it is left in."""
    state = podinfo.drain_state(pod)
    if state is None or state is DrainState.READY_FOR_DELETION:
        return state
    if view.poolers is None:
        _block(ctx, view, pod, state, "topology-unavailable", view.topology_error)
        return state
    own = view.own(pod)
    facts = Facts(is_primary=own is not None and own.role is keys.Role.PRIMARY, force=_force(pod))
    if facts.is_primary and state is DrainState.REQUESTED and not podinfo.annotations(pod).get(keys.ANN_DRAIN_BLOCKED):
        for target in view.event_targets(pod):
            ctx.kube.event(target, "PrimaryDrain", f"{podinfo.name(pod)} is the PRIMARY: Multigres era A has no "
                           "switchover API; it leaves through multiorch failover once the pod is deleted",
                           warning=True)
    for _ in range(MAX_STEPS):
        d = decide(state, facts)
        if d.kind == "done":
            return state
        if d.kind == "need":
            _gather(ctx, view, pod, facts, d.need)
        elif d.kind == "effect":
            _perform(ctx, view, pod, facts, d.effect)
        elif d.kind == "write":
            pod = _write_state(ctx, view, pod, state, d)
            state = d.state
        else:
            _block(ctx, view, pod, state, d.reason, facts.extra.get("message", ""))
            return state
    return state


def finalize(ctx: Context, view: ShardView, pod: Obj) -> bool:
    """External deletion: leave sync replication if the primary answers, unregister, drop the finalizer.

    The pod is going away whatever we do (its containers are already being stopped), so a refused
    REMOVE is reported but does not hold the finalizer; only an unreadable topology does, because the
    record must not outlive the pod. Returns True when the finalizer was removed.
    """
    name = podinfo.name(pod)
    if podinfo.drain_state(pod) is not DrainState.READY_FOR_DELETION:
        if view.poolers is None:
            for target in view.event_targets(pod):
                ctx.kube.event(target, "UnregistrationFailed", f"{name}: topology unavailable "
                               f"({view.topology_error}); the finalizer stays until it is back", warning=True)
            return False
        own, own_id = view.own(pod), view.own_id(pod)
        primary = view.primary_other_than(pod)
        if own is not None and own.role is not keys.Role.PRIMARY and primary is not None:
            ctx.effect(Effect.REMOVE_STANDBY.value)
            try:
                ctx.dataplane.remove_standby(primary, own_id, own.native)
            except DataPlaneError as exc:
                for target in view.event_targets(pod):
                    ctx.kube.event(target, "ExternalDeletion", f"{name}: could not leave synchronous "
                                   f"replication ({exc.reason}: {exc.message}); unregistering anyway",
                                   warning=True)
        if own_id is not None:
            ctx.effect(Effect.UNREGISTER.value)
            try:
                ctx.dataplane.unregister(view.topology, own_id)
            except DataPlaneError as exc:
                for target in view.event_targets(pod):
                    ctx.kube.event(target, "UnregistrationFailed", f"{name}: {exc.message}", warning=True)
                return False
    ctx.effect("remove-finalizer")
    ctx.kube.remove_pod_finalizer(pod, keys.FINALIZER_POD)
    ctx.log.info("pod finalized", extra={"pod": name})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "PoolerUnregistered", f"{name}: pooler unregistered; finalizer removed")
    return True
