"""Executes the drain decisions of `drain.py` for one pod, and the finalizer path of external deletions.

Every write and every state-changing data-plane call goes through `ctx.effect(...)` first, so tests
can stop the agent between any two side effects and prove that a fresh agent finishes the job.
"""

from __future__ import annotations

import logging
from typing import cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import drain_annotations

from ..dataplane.base import DataPlane, DataPlaneError, Eligibility, Pooler, RefusalReason, SyncReplication
from . import podinfo
from .context import Context, ShardView
from .drain import Blocked, Decision, Effect, Facts, Guard, Need, decide
from .kube import now_rfc3339

MAX_STEPS = 24
# A deleted pod's multipooler stops on its own; telling it INELIGIBLE first only closes a window. Once it
# has exited, a call to its old address waited out the whole RPC timeout on the real node (10 s of the
# finalizer, the pod's deletion and the pass). A live one answers in milliseconds.
LEAVING_POOLER_TIMEOUT_S = 2.0
_PRIMARY_EXIT = {
    False: "it leaves through multiorch failover once the pod is deleted",
    # v0.1.0: the kubelet's SIGTERM makes its multipooler INELIGIBLE, which multiorch replaces at once.
    True: "it leaves when the pod is deleted: its multipooler's graceful stop reports INELIGIBLE and "
          "multiorch elects a new primary at once",
}


def _force(ctx: Context, view: ShardView, pod: Manifest,
           state: DrainState | None) -> tuple[Manifest, DrainState | None]:
    """The state a force annotation lets this pass step past; a stale one is removed and reported."""
    force = drain_annotations.read_force(podinfo.annotations(pod), state)
    if force.stale is None:
        return pod, force.target
    return discard_force(ctx, view, pod, force.stale), None


def discard_force(ctx: Context, view: ShardView, pod: Manifest, why: str) -> Manifest:
    """Force is one-shot: an annotation that no step can use now is removed, never kept for later."""
    name = podinfo.name(pod)
    ctx.effect("write:force-discarded")
    updated = ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_DRAIN_FORCE: None}, precondition=True)
    ctx.log.warning("stale force annotation removed", extra={"pod": name, "detail": why})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "DrainForceDiscarded", f"{name}: {why}; removed, nothing was forced", warning=True)
    return updated or pod


def report_unknown_state(ctx: Context, view: ShardView, pod: Manifest, value: str) -> None:
    """An unknown drain-state value is left alone (no step, no restore) and reported once per value."""
    key = (view.namespace, podinfo.name(pod))
    if ctx.unknown_drains.get(key) == value:
        return
    ctx.unknown_drains[key] = value
    text = drain_annotations.unknown_state_message(podinfo.name(pod), value)
    ctx.log.warning("unknown drain state", extra={"pod": key[1], "value": value})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "UnknownDrainState", text, warning=True)


def primary_guard(view: ShardView, pod: Manifest) -> Guard:
    primary = view.primary_other_than(pod)
    if primary is None:
        return Guard.NO_PRIMARY
    ppod = view.pod_for(primary)
    if ppod is None:
        return Guard.POD_MISSING
    if podinfo.deleting(ppod):
        return Guard.POD_TERMINATING
    if podinfo.drain_under_way(ppod):
        return Guard.POD_DRAINING
    if not podinfo.containers_ready(ppod):
        return Guard.POD_NOT_READY
    return Guard.OK


def _plane(view: ShardView) -> DataPlane:
    assert view.dataplane is not None, "a view with poolers has an adapter"
    return view.dataplane


def _standby_out(view: ShardView, pod: Manifest) -> bool:
    """v0.1.0: does the standby itself refuse cohort membership (INELIGIBLE), or is it gone?

    Without its record (deleted in `acknowledged`) it cannot be asked, and needs not be: a pooler
    that restarts registers its record again at start-up, so a missing record means the INELIGIBLE
    flag (in memory) is still in force or the pooler is down. A pod the agent marked
    keys.ANN_POSTGRES_STUCK counts as gone: its PostgreSQL has stayed down past --stuck-start-after
    and v0.1.0 never brings it back, so it cannot be made INELIGIBLE (its StopReplication waits
    behind the endless start, or finds no PostgreSQL) and cannot rejoin (stuck_start.py).
    """
    own = view.own(pod)
    if own is None or stuck(pod):
        return True
    try:
        return _plane(view).standby_state(own).eligibility is Eligibility.INELIGIBLE
    except DataPlaneError as exc:
        return exc.reason is RefusalReason.POOLER_UNREACHABLE


def stuck(pod: Manifest) -> bool:
    return bool(podinfo.annotations(pod).get(keys.ANN_POSTGRES_STUCK))


def _gather(ctx: Context, view: ShardView, pod: Manifest, facts: Facts, need: Need) -> None:
    if need is Need.PRIMARY_GUARD:
        facts.guard = primary_guard(view, pod)
        return
    if need is Need.STANDBY:
        facts.standby_out = _standby_out(view, pod)
        return
    own, own_id = view.own(pod), view.own_id(pod)
    target = own if facts.is_primary else view.primary_other_than(pod)
    if target is None:
        facts.sync_error, facts.extra["message"] = RefusalReason.NO_PRIMARY.value, "no confirmed primary"
        return
    try:
        sync = view.sync_replication(target, pod)
    except DataPlaneError as exc:
        facts.sync_error, facts.extra["message"] = exc.reason.value, exc.message
        return
    if facts.is_primary:
        # The failover that replaces it needs a streaming standby, and a cohort that stays durable.
        facts.failover_target = any(s in sync.connected for s in sync.standbys) and sync.durable_without(own_id)
        if facts.by_eligibility and facts.failover_target:
            facts.not_streaming = _settling(ctx, view, pod, sync)
            if facts.not_streaming:
                facts.extra["message"] = (f"{', '.join(facts.not_streaming)} not streaming from the primary yet; its "
                                          f"drain waits up to {ctx.config.primary_drain_settle_s:g}s for them")
    else:
        facts.listed = sync.lists(own_id)
        facts.durable = sync.durable_without(own_id)


def standbys_not_streaming(view: ShardView, pod: Manifest, sync: SyncReplication) -> tuple[str, ...]:
    """v0.1.0: the standby pods that should stream from the primary `pod` and do not, by name. A
    successor that is Ready does not stream until multiorch's FixReplication has configured it, and
    that action (its verification waits up to 5 s) holds multiorch's election until it ends: in
    `make demo` the primary's replacement waited 4 s for it. Pods that leave themselves (a drain, a
    deletion, a stuck start) do not count, nor do records with no pod (pruning removes them)."""
    own_id, silent = view.own_id(pod), []
    for pooler in view.poolers or ():
        other = view.pod_for(pooler)
        if pooler.id == own_id or other is None or podinfo.deleting(other) or stuck(other):
            continue
        if podinfo.drain_state(other) is None and pooler.id not in sync.connected:
            silent.append(podinfo.name(other))
    return tuple(sorted(silent))


def _settling(ctx: Context, view: ShardView, pod: Manifest, sync: SyncReplication) -> tuple[str, ...]:
    """standbys_not_streaming while the primary's drain is in `requested` and younger than
    --primary-drain-settle; after that the drain goes on without them (it is not a safety condition:
    failover_target is). Later states never wait, so they neither look nor warn."""
    if podinfo.drain_state(pod) is not DrainState.REQUESTED:
        return ()
    silent = standbys_not_streaming(view, pod, sync)
    now = ctx.clock()
    waited = now - podinfo.drain_since(pod, now)
    if silent and waited >= ctx.config.primary_drain_settle_s:
        ctx.log.warning("primary drain goes on with standbys not streaming", extra={
            "pod": podinfo.name(pod), "standbys": ", ".join(silent), "waited_s": round(waited, 1)})
        return ()
    return silent


def _mark_ineligible(ctx: Context, pod: Manifest) -> Manifest:
    """Written before the RPC, so a drain cancelled at any point afterwards is undone."""
    if podinfo.annotations(pod).get(keys.ANN_DRAIN_INELIGIBLE):
        return pod
    ctx.effect("write:made-ineligible")
    return ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_DRAIN_INELIGIBLE: "true"}, precondition=True)


def _perform(ctx: Context, view: ShardView, pod: Manifest, facts: Facts, effect: Effect) -> Manifest:
    own, own_id = view.own(pod), view.own_id(pod)
    plane = _plane(view)
    if effect is Effect.MAKE_INELIGIBLE:
        pod = _mark_ineligible(ctx, pod)
    ctx.effect(effect.value)
    try:
        if effect is Effect.MAKE_INELIGIBLE:
            if own is None:
                # The record is gone: deleted by this drain once the standby was proven INELIGIBLE (or
                # dead), and a restart would have registered it again, so the flag still holds; or it
                # never registered, and then it is in no cohort. Either way only the REMOVE is left.
                facts.extra["message"] = "no pooler record: not restarted since it was made ineligible"
            elif stuck(pod):
                facts.extra["message"] = (f"its PostgreSQL stays down ({keys.ANN_POSTGRES_STUCK}): nothing to make "
                                          "ineligible, removing it")
            else:
                try:
                    plane.make_ineligible(own)
                except DataPlaneError as exc:
                    # A dead pooler cannot be told; while it stays down multiorch does not re-add it,
                    # so our own CAS REMOVE is enough (docs/agent.md, dead poolers).
                    if exc.reason is not RefusalReason.POOLER_UNREACHABLE:
                        raise
                    facts.extra["message"] = f"pooler unreachable, removing it anyway: {exc.message}"
            facts.ineligible_done = True
        elif effect is Effect.REMOVE_STANDBY:
            if own_id is not None:  # None: the pod names another pod's record (trust.py); nothing of its own
                # A primary: drain._guarded let REMOVE_STANDBY through only after primary_guard found one.
                primary = cast(Pooler, view.primary_other_than(pod))
                plane.remove_standby(primary, own_id, own.native if own else None)
            facts.removal_done = True
        else:
            if own_id is not None:
                plane.unregister(view.topology, own_id)
            facts.unregistered = True
    except DataPlaneError as exc:
        facts.extra["message"] = exc.message
        if effect is Effect.MAKE_INELIGIBLE:
            facts.ineligible_error = exc.reason.value
        elif effect is Effect.REMOVE_STANDBY:
            facts.removal_error = exc.reason.value
        else:
            facts.unregister_error = exc.reason.value
    if facts.by_eligibility:
        facts.forget_proofs()
    return pod


def _shard(view: ShardView, pod: Manifest) -> tuple[str, str]:
    """(namespace, shard) labels of a pod's drain metrics: the MultigresShard's name, as alerts show it."""
    return view.namespace, (podinfo.name(view.shard) if view.shard else podinfo.owner_shard_name(pod)) or ""


def _set_stalled(ctx: Context, view: ShardView, pod: Manifest, stalled: bool) -> None:
    key, shard = (view.namespace, podinfo.name(pod)), _shard(view, pod)
    if stalled:
        ctx.stalled[key] = shard
    else:
        ctx.stalled.pop(key, None)
    ctx.metrics.drains_stalled.labels(*shard).set(sum(1 for s in ctx.stalled.values() if s == shard))


def dns_label(old: DrainState, new: DrainState) -> dict[str, str | None] | None:
    """A finished drain takes the pod's name out of its headless Service's DNS (keys.LABEL_DNS), in
    the same write, before the engine deletes the pod: multiorch and the multigateway re-resolve the
    name when the pod's multipooler stops, and an answer naming the dying pod would be kept for 30 s
    (grpc-go's floor between resolutions), while no answer is asked again after 1 s, 1.6 s, ... and
    finds the successor's address. A drain sent back from ready-for-deletion puts the name back."""
    if new is DrainState.READY_FOR_DELETION:
        return {keys.LABEL_DNS: None}
    if old is DrainState.READY_FOR_DELETION:
        return {keys.LABEL_DNS: keys.DNS_PUBLISHED}
    return None


def _write_state(ctx: Context, view: ShardView, pod: Manifest, old: DrainState, d: Decision) -> Manifest:
    assert d.state is not None  # a "write" Decision always names its state (Decision.write)
    now = ctx.clock()
    ann: dict[str, str | None] = {
        keys.ANN_DRAIN_STATE: d.state.value,
        keys.ANN_DRAIN_STATE_SINCE: now_rfc3339(now),
        keys.ANN_DRAIN_BLOCKED: None,
    }
    before = podinfo.annotations(pod)
    if d.forced or before.get(keys.ANN_DRAIN_FORCE) == old.value:
        ann[keys.ANN_DRAIN_FORCE] = None  # one-shot: used up when its state is left, forced or not
    if d.forced:
        ann[keys.ANN_DRAIN_FORCED] = drain_annotations.forced_record(before.get(keys.ANN_DRAIN_FORCED), old,
                                                                     now_rfc3339(now))
    ctx.effect(f"write:{d.state.value}")
    # The resourceVersion precondition stops us from reviving a drain the engine just cancelled.
    updated = ctx.kube.patch_pod_meta(pod, annotations=ann, labels_=dns_label(old, d.state), precondition=True)
    shard = _shard(view, pod)
    ctx.metrics.drain_state_seconds.labels(*shard, old.value).observe(max(0.0, now - podinfo.drain_since(pod, now)))
    name = podinfo.name(pod)
    ctx.log.info("drain state written", extra={"pod": name, "from": old.value, "to": d.state.value,
                                              "forced": d.forced})
    if d.forced:
        ctx.metrics.drain_forced.labels(*shard, old.value).inc()
        for target in view.event_targets(pod):
            ctx.kube.event(target, "DrainForced", f"{name}: step {old} forced by {keys.ANN_DRAIN_FORCE}; "
                           f"its proof was skipped", warning=True)
    if d.reason:  # a proof failed after it had held: the drain went back a step
        for target in view.event_targets(pod):
            ctx.kube.event(target, "DrainRegressed", f"{name}: back from {old} to {d.state}: {d.reason}; it is "
                           "not deleted in this state", warning=True)
    # A DrainStalled=True left by an agent before this one (its `stalled` memory is gone) clears too.
    if (view.namespace, name) in ctx.stalled or podinfo.condition_true(pod, keys.POD_CONDITION_DRAIN_STALLED):
        _set_stalled(ctx, view, pod, False)
        updated = ctx.kube.set_pod_condition(updated, keys.POD_CONDITION_DRAIN_STALLED, "False", "Progressing",
                                             f"now {d.state}")
    if d.state is DrainState.READY_FOR_DELETION:
        requested = podinfo.epoch(podinfo.annotations(pod).get(keys.ANN_DRAIN_REQUESTED_AT))
        if requested is not None:
            ctx.metrics.drain_total_seconds.labels(*shard).observe(max(0.0, now - requested))
        ctx.metrics.drains_completed.labels(*shard).inc()
        for target in view.event_targets(pod):
            ctx.kube.event(target, "DrainCompleted", f"{name}: pooler left synchronous replication and the "
                           "topology; ready for deletion")
    return updated


# A wait by design, bounded (--primary-drain-settle): a Normal event, not counted as a failure.
_WAITS = frozenset({Blocked.STANDBYS_NOT_STREAMING.value})


def _block(ctx: Context, view: ShardView, pod: Manifest, state: DrainState, reason: str, message: str) -> None:
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
            waits = reason in _WAITS
            if not waits:
                ctx.metrics.drain_failures.labels(*_shard(view, pod), reason).inc()
            ctx.log.log(logging.INFO if waits else logging.WARNING, "drain blocked", extra={
                "pod": name, "state": state.value, "reason": reason, "detail": message})
            for target in view.event_targets(pod):
                ctx.kube.event(target, "DrainBlocked", text, warning=not waits)
    stalled_for = now - podinfo.drain_since(pod, now)
    if stalled_for >= ctx.config.stall_after_s and (view.namespace, name) not in ctx.stalled:
        _set_stalled(ctx, view, pod, True)
        msg = (f"{text}; stalled for {int(stalled_for)}s. Fix the cause, or force this one step with "
               f"annotation {keys.ANN_DRAIN_FORCE}={state}")
        pod = ctx.kube.set_pod_condition(pod, keys.POD_CONDITION_DRAIN_STALLED, "True", reason, msg)
        for target in view.event_targets(pod):
            ctx.kube.event(target, keys.POD_CONDITION_DRAIN_STALLED, msg, warning=True)


def run_drain(ctx: Context, view: ShardView, pod: Manifest) -> DrainState | None:
    """Advance one pod's drain as far as the proofs allow; returns the state it is left in."""
    state = podinfo.drain_state(pod)
    if state is None:
        return state
    if state is not DrainState.READY_FOR_DELETION and podinfo.annotations(pod).get(keys.ANN_BACKUP_RUNNING):
        # Deleting it would kill the backup: the drain goes on once the mark is gone (backup_runner.py).
        _block(ctx, view, pod, state, keys.DRAIN_BLOCKED_BACKUP,
               f"the pod is taking a base backup ({keys.ANN_BACKUP_RUNNING}); the drain goes on when it ends")
        return state
    if state is DrainState.READY_FOR_DELETION:
        # Only v0.1.0 looks again (drain.decide: a standby back before the engine deleted the pod);
        # a finished drain is never blocked, so an unreadable topology just leaves it as it is.
        if view.poolers is None or not _plane(view).supports_eligibility or podinfo.deleting(pod):
            return state
    elif view.poolers is None:
        _block(ctx, view, pod, state, view.topology_reason, view.topology_error)
        return state
    pod, force = _force(ctx, view, pod, state)
    facts = Facts(is_primary=view.is_primary(pod), force=force, by_eligibility=_plane(view).supports_eligibility)
    if facts.is_primary and state is DrainState.REQUESTED and not podinfo.annotations(pod).get(keys.ANN_DRAIN_BLOCKED):
        for target in view.event_targets(pod):
            ctx.kube.event(target, "PrimaryDrain", f"{podinfo.name(pod)} is the PRIMARY: Multigres "
                           f"{_plane(view).version} has no switchover API; {_PRIMARY_EXIT[facts.by_eligibility]}",
                           warning=True)
    for _ in range(MAX_STEPS):
        d = decide(state, facts)
        if d.kind == "done":
            return state
        if d.kind == "need":
            _gather(ctx, view, pod, facts, cast(Need, d.need))
        elif d.kind == "effect":
            pod = _perform(ctx, view, pod, facts, cast(Effect, d.effect))
        elif d.kind == "write":
            pod = _write_state(ctx, view, pod, state, d)
            if d.state is DrainState.DRAINING and state in (DrainState.ACKNOWLEDGED, DrainState.READY_FOR_DELETION):
                facts = Facts(is_primary=facts.is_primary, by_eligibility=facts.by_eligibility)  # start over
            state = cast(DrainState, d.state)
        else:
            _block(ctx, view, pod, state, d.reason, facts.extra.get("message", ""))
            return state
    return state


def finalize(ctx: Context, view: ShardView, pod: Manifest) -> bool:
    """External deletion: leave sync replication if the primary answers, unregister, drop the finalizer.

    The pod is going away whatever we do (its containers are already being stopped), so a refused
    REMOVE is reported but does not hold the finalizer; only an unreadable topology does, because the
    record must not outlive the pod. Returns True when the finalizer was removed.
    """
    name = podinfo.name(pod)
    if keys.LABEL_DNS in podinfo.labels(pod):
        # Out of DNS first, as a finished drain is (dns_label): its multipooler is stopping now.
        ctx.effect("write:unpublished")
        pod = ctx.kube.patch_pod_meta(pod, labels_={keys.LABEL_DNS: None}, missing_ok=True) or pod
    if podinfo.drain_state(pod) is not DrainState.READY_FOR_DELETION:
        if view.poolers is None:
            for target in view.event_targets(pod):
                ctx.kube.event(target, "UnregistrationFailed", f"{name}: topology unavailable "
                               f"({view.topology_error}); the finalizer stays until it is back", warning=True)
            return False
        own, own_id = view.own(pod), view.own_id(pod)
        primary = view.primary_other_than(pod)
        plane = _plane(view)
        if own is not None and not view.is_primary(pod) and primary is not None:
            ctx.effect(Effect.REMOVE_STANDBY.value)
            try:
                if plane.supports_eligibility:
                    # The pod's multipooler is being stopped anyway (INELIGIBLE on SIGTERM); say it
                    # first, or multiorch re-adds an ELIGIBLE standby right after our REMOVE. One
                    # that is already gone cannot be told and is not re-added: remove it regardless.
                    try:
                        plane.make_ineligible(own, timeout_s=LEAVING_POOLER_TIMEOUT_S)
                    except DataPlaneError as exc:
                        if exc.reason is not RefusalReason.POOLER_UNREACHABLE:
                            raise
                plane.remove_standby(primary, own.id, own.native)
            except DataPlaneError as exc:
                for target in view.event_targets(pod):
                    ctx.kube.event(target, "ExternalDeletion", f"{name}: could not leave synchronous "
                                   f"replication ({exc.reason}: {exc.message}); unregistering anyway",
                                   warning=True)
        if own_id is not None:
            ctx.effect(Effect.UNREGISTER.value)
            try:
                plane.unregister(view.topology, own_id)
            except DataPlaneError as exc:
                for target in view.event_targets(pod):
                    ctx.kube.event(target, "UnregistrationFailed", f"{name}: {exc.message}", warning=True)
                return False
    ctx.effect("remove-finalizer")
    ctx.kube.remove_pod_finalizer(pod, keys.FINALIZER_POD)
    ctx.forget_pod(pod)
    ctx.log.info("pod finalized", extra={"pod": name})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "PoolerUnregistered", f"{name}: pooler unregistered; finalizer removed")
    return True


def restore_eligibility(ctx: Context, view: ShardView, pod: Manifest) -> bool:
    """A drain was cancelled after the agent made the standby INELIGIBLE: StartReplication, so
    multiorch reconnects it and adds it back to the cohort; then drop the marker. Returns True when done."""
    name, own = podinfo.name(pod), view.own(pod)
    if view.poolers is None or own is None or not _plane(view).supports_eligibility:
        return False  # retried on the next pass (a record comes back when the pooler restarts)
    ctx.effect("make-eligible")
    try:
        _plane(view).make_eligible(own)
    except DataPlaneError as exc:
        if exc.reason is not RefusalReason.POOLER_UNREACHABLE:
            for target in view.event_targets(pod):
                ctx.kube.event(target, "EligibilityRestoreFailed", f"{name}: {exc.message}", warning=True)
            return False
    ctx.effect("write:made-ineligible")
    ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_DRAIN_INELIGIBLE: None})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "EligibilityRestored", f"{name}: drain cancelled; replication restarted, "
                       "multiorch adds the standby back to the cohort")
    return True
