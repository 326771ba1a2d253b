"""The planner: (desired, observed, now) -> ordered actions, each with a reason. Pure: no I/O, no clock.

The rules live in small modules, each citing the seed sections it implements:
plan_infra (shared objects), plan_pool (pods, data PVCs, drains per pool and cell), plan_drain
(drain requests, victim choice, switchover), plan_rolling (spec-hash rolling update, shard-wide),
plan_stuck (pods whose PostgreSQL stays down), plan_maintenance (cordoned nodes), plan_switchover
(the switchover request), plan_delete (shard deletion), plan_pause (the pause annotation). This
module puts them together and checks the spec against what already exists (pools and cells are
append-only, volumes only grow): any such error means no action at all.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from ..core import keys
from ..core.manifest import Manifest
from ..spec import quantity
from ..state import facts, ownership
from ..state.desired import Desired
from ..state.observed import Observed
from . import actions
from .actions import Action, Phase
from .clone import plan_clone
from .context import REQUEUE_DRAIN, Context, PoolView, decommission_problems, pool_views
from .delete import CLEANUP_TIMEOUT, plan_delete
from .drill import DrillOutcome, plan_drill
from .infra import plan_generated_password, plan_generated_tls, plan_infra, plan_prune
from .maintenance import MaintenanceOutcome, plan_maintenance
from .pause import Pause, pause_of
from .pool import PoolOutcome, plan_pool
from .rolling import RollingOutcome, plan_rolling
from .stuck import StuckOutcome, plan_stuck
from .switchover import SwitchoverOutcome, plan_switchover


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pools: list[PoolOutcome] = field(default_factory=list)
    rolling: RollingOutcome = field(default_factory=RollingOutcome)
    maintenance: MaintenanceOutcome = field(default_factory=MaintenanceOutcome)
    stuck: StuckOutcome = field(default_factory=StuckOutcome)
    switchover: SwitchoverOutcome = field(default_factory=SwitchoverOutcome)
    drill: DrillOutcome = field(default_factory=DrillOutcome)
    waiting: list[str] = field(default_factory=list)
    requeue_after: float = 0.0
    deleting: bool = False
    finished: bool = False
    # Set when the shard is paused: `actions` is then empty and what it would have held is here.
    paused: Pause | None = None
    withheld: list[Action] = field(default_factory=list)
    # Decommission entries naming no pod of their pool: reported, ignored (plan_context).
    decommission_problems: list[str] = field(default_factory=list)

    @property
    def pause_message(self) -> str:
        return self.paused.message(self.withheld, deleting=self.deleting) if self.paused else ""

    @property
    def blocked(self) -> list[str]:
        return [p.blocked for p in self.pools if p.blocked]

    @property
    def deferred(self) -> list[str]:
        """Disruptive actions waiting for the maintenance window, each with its opening time."""
        out = [d for p in self.pools for d in p.deferred]
        return out + ([self.rolling.waiting] if self.rolling.deferred_for and self.rolling.waiting else [])

    @property
    def unknown_drains(self) -> list[str]:
        """Pods left alone because their drain-state annotation holds no known state."""
        return [m for p in self.pools for m in p.unknown_drains]

    def lines(self) -> list[str]:
        """The plan as text, for --diff and logs."""
        out = [f"error: {e}" for e in self.errors]
        out += [a.describe() for a in self.actions]
        if self.paused:
            out += [f"paused: {self.paused.headline()}"] + [f"withheld: {a.describe()}" for a in self.withheld]
        out += [f"waiting: {w}" for w in self.waiting]
        out += [f"warning: {w}" for w in self.unknown_drains + self.decommission_problems]
        return out or ["nothing to do"]


def _storage_errors(views: list[PoolView]) -> list[str]:
    errors = []
    for view in views:
        want = quantity.parse(view.dp.storage_size)
        for pvc in view.pvcs.values():
            live = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
            if live and quantity.parse(live) > want:
                errors.append(f"spec.pools.{view.dp.pool}.storage.size: {view.dp.storage_size} is smaller than "
                              f"PVC {facts.name(pvc)} ({live}); volumes can only grow")
                break
    return errors


def _topology_errors(desired: Desired, observed: Observed) -> list[str]:
    """Pools and cells are append-only (seed 002 §4, §11): live pods of a pool or cell that left
    the spec would be orphaned with their topology entries."""
    wanted = {(p.pool, p.cell) for p in desired.pools}
    pools = {p.pool for p in desired.pools}
    errors = set()
    for pod in observed.pods:
        lab = facts.labels(pod)
        pool, cell = lab.get(keys.LABEL_POOL), lab.get(keys.LABEL_CELL)
        if (pool, cell) in wanted or pool is None:
            continue
        if pool not in pools:
            errors.add(f"spec.pools: pool {pool} still has pods but is missing; pools are append-only")
        else:
            errors.add(f"spec.pools.{pool}.cells: cell {cell} still has pods but is missing; "
                       "cells are append-only")
    return sorted(errors)


def _rival_errors(desired: Desired, observed: Observed) -> list[str]:
    """Another live MultigresShard already runs this cluster/database/shard here (state/ownership.py): its
    pods and PVCs carry the same names, so this one may neither create, adopt nor delete them."""
    sid = desired.shard
    return [f"spec.clusterName: {sid.cluster} (database {sid.database}, shard {sid.shard}) is already run by "
            f"MultigresShard {name} (uid {uid}) in this namespace; this MultigresShard takes no action "
            "while it exists" for name, uid in sorted(observed.rivals.items())]


def _names_used_by_pods(desired: Desired) -> list[tuple[str, str, str]]:
    """(field, kind, name) of the generated Secrets and shared objects the pods use by name."""
    out = []
    if desired.generated_password is not None:
        out.append(("spec.postgresPasswordSecretRef", "Secret", desired.generated_password.secret))
    if desired.generated_tls is not None:
        out += [("spec.backup.pgbackrestTLS", "Secret", desired.generated_tls.ca_secret),
                ("spec.backup.pgbackrestTLS", "Secret", desired.generated_tls.tls_secret)]
    return out + [("spec", o["kind"], o["metadata"]["name"]) for o in desired.objects]


def _left_by_a_deleted_shard(obj: Manifest, observed: Observed) -> bool:
    """Controlled by a MultigresShard that no longer exists: the garbage collector is removing it."""
    ref = ownership.controller_ref(obj)
    return (ref is not None and ref.get("kind") == keys.SHARD_KIND and ref.get("uid") not in observed.rivals.values()
            and ref.get("uid") != facts.uid(observed.cr or {}))


def _collecting(desired: Desired, observed: Observed) -> list[str]:
    """Objects under the names the pods use that a deleted MultigresShard (of the same name,
    re-created at once) left behind: the pass waits for the garbage collector instead of refusing."""
    return sorted(f"{kind} {name} of a deleted MultigresShard is being garbage-collected"
                  for _field, kind, name in _names_used_by_pods(desired)
                  if (obj := observed.find_foreign(kind, name)) is not None and _left_by_a_deleted_shard(obj, observed))


def _foreign_name_errors(desired: Desired, observed: Observed) -> list[str]:
    """A Secret the engine would generate, or a shared object it renders, exists under its name but
    is not the shard's (state/ownership.py): the pods use these by name, so they would run with someone
    else's password, certificate or backup volume. (Pool pods and data PVCs go to a free index.)"""
    errors = []
    for path, kind, name in _names_used_by_pods(desired):
        obj = observed.find_foreign(kind, name)
        if obj is None or _left_by_a_deleted_shard(obj, observed):
            continue
        if path != "spec":
            errors.append(f"{path}: the engine generates Secret {name}, but a Secret of that name exists that "
                          "this MultigresShard does not control; delete it, or name your own Secret in the spec")
            continue
        hint = (f"; if it is this shard's, annotate it {keys.ANN_OWNER_SHARD}=<MultigresShard name>"
                if kind == "PersistentVolumeClaim" else "")
        errors.append(f"spec: {kind} {name} exists but is not this MultigresShard's "
                      f"({ownership.describe([obj])}){hint}")
    return errors


def validate_live(desired: Desired, observed: Observed, views: list[PoolView]) -> list[str]:
    return (_rival_errors(desired, observed) + _foreign_name_errors(desired, observed)
            + _topology_errors(desired, observed) + _storage_errors(views))


def _shard_finalizer(ctx: Context) -> list[Action]:
    cr = ctx.observed.cr
    if cr is None or keys.FINALIZER_SHARD in facts.finalizers(cr):
        return []
    body = {"metadata": {"finalizers": [*facts.finalizers(cr), keys.FINALIZER_SHARD]}}
    return [actions.patch(cr, body, "add the shard finalizer: deletion must clean up pods, PVCs and topology",
                          Phase.SHARD)]


def _ordered(found: list[Action]) -> list[Action]:
    return sorted(found, key=lambda a: a.phase)  # stable: rule order is kept inside a phase


def plan(desired: Desired, observed: Observed, now: dt.datetime, *, delete: bool = False,
         cleanup_timeout: float = CLEANUP_TIMEOUT) -> Plan:
    result = _plan(desired, observed, now, delete=delete, cleanup_timeout=cleanup_timeout)
    pause = pause_of(observed.cr)
    if pause is None:
        return result
    # Paused: keep the decisions for status and send none of them. No requeue: lifting the pause
    # changes the shard, which brings the next pass.
    result.paused, result.withheld, result.actions = pause, result.actions, []
    result.requeue_after, result.finished = 0.0, False
    return result


def _plan(desired: Desired, observed: Observed, now: dt.datetime, *, delete: bool,
          cleanup_timeout: float) -> Plan:
    ctx = Context(desired, observed, now)
    views = pool_views(desired, observed)
    cr = observed.cr
    if delete or (cr is not None and facts.is_terminating(cr)):
        outcome = plan_delete(ctx, views, cleanup_timeout)
        return Plan(actions=_ordered(outcome.actions), waiting=outcome.waiting,
                    requeue_after=outcome.requeue_after, deleting=True, finished=outcome.finished)
    errors = validate_live(desired, observed, views)
    if errors:
        return Plan(errors=errors)
    collecting = _collecting(desired, observed)
    if collecting:
        return Plan(waiting=collecting, requeue_after=REQUEUE_DRAIN)
    found = (_shard_finalizer(ctx) + plan_infra(ctx) + plan_generated_tls(ctx) + plan_generated_password(ctx)
             + plan_prune(ctx))
    clone = plan_clone(ctx, desired.clone_from, desired.clone, observed.clone_pod)
    found += clone.actions
    if clone.holds_pools:  # no pool pod before the clone's repository is copied
        return Plan(actions=_ordered(found), waiting=[clone.waiting], requeue_after=clone.requeue_after)
    outcomes = [plan_pool(ctx, view) for view in views]
    for o in outcomes:
        found += o.actions
    # Healing goes first; pods on cordoned nodes move before a rolling update takes its next victim
    # (both wait for the pools to settle, which a stuck pod never lets happen): one at a time in the shard.
    stuck = plan_stuck(ctx, outcomes)
    found += stuck.actions
    maintenance = plan_maintenance(ctx, outcomes)
    found += maintenance.actions
    rolling = plan_rolling(ctx, outcomes, held_by="node maintenance" if maintenance.in_progress else None)
    found += rolling.actions
    switchover = plan_switchover(ctx, outcomes, rolling, maintenance)
    found += switchover.actions
    drill = plan_drill(ctx, desired.drill, observed.drill_pod)
    found += drill.actions
    # A stalled node maintenance leads: it is the cause of what the pools wait for.
    waiting = ([w for w in (stuck.waiting, maintenance.waiting) if w] + [w for o in outcomes for w in o.waiting]
               + ([rolling.waiting] if rolling.waiting else []))
    # A drill does not make the shard wait (its pod is no pool pod): it only asks to be looked at again.
    requeues = [r for r in [o.requeue_after for o in outcomes] + [drill.requeue_after] if r]
    if rolling.deferred_for:
        requeues.append(rolling.deferred_for)
    if (rolling.in_progress and not rolling.deferred_for and not rolling.waits_for_window) or found \
            or maintenance.in_progress or stuck.in_progress:
        requeues.append(REQUEUE_DRAIN)
    return Plan(actions=_ordered(found), pools=outcomes, rolling=rolling, maintenance=maintenance, stuck=stuck,
                switchover=switchover, drill=drill, waiting=waiting,
                requeue_after=min(requeues) if requeues else 0.0, decommission_problems=decommission_problems(desired))
