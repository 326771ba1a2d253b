"""Shared infrastructure: everything but pool pods and data PVCs (headless Services, PDBs,
ConfigMaps, backup PVCs, MultiOrch, TLS material). Always present, applied only when the live
object differs (seed 000 "Resource Topology", "Pod Disruption Budgets").

Pruning (docs/architecture.md, "Pruning"): a Service, PDB, ConfigMap, Deployment or NetworkPolicy that
left the desired set is deleted when the shard owns it — our ownerReference to the MultigresShard
(its uid) and the shard and managed-by labels. Never a PVC, never a Secret (generated ones go with the
shard through their ownerReference), never an object without our ownerReference, and nothing when
no MultigresShard drives the pass. ConfigMap keys the engine applied and no longer renders are
dropped by server-side apply (the engine's field manager stops owning them); their names are kept in
ANN_CONFIG_KEYS because the operator's caches do not keep managedFields."""

from __future__ import annotations

import copy

from ..core import keys, labels
from ..core.manifest import Manifest
from ..state import drain_annotations, facts
from ..state.observed import INFRA_KINDS
from . import actions, compare, tls_policy
from .actions import Action, Phase
from .context import Context, claim_pvc, has_owner_ref, owner_refs_patch


def infra_manifest(ctx: Context, obj: Manifest) -> Manifest:
    """The shared object as rendered (its owner reference is the renderer's: the backup PVC's follows
    backup_pvc_policy); a PVC is marked as the driving shard's (the backup PVC also with the backup
    the shard recorded), a ConfigMap records its data keys."""
    out = copy.deepcopy(obj)
    if out["kind"] == "PersistentVolumeClaim":
        claim_pvc(ctx, out)
        guard = ctx.desired.bootstrap
        recorded = ctx.recorded_backup() if guard is not None and out["metadata"]["name"] == guard.backup_pvc else None
        if recorded:  # outlives the MultigresShard and its status: the bootstrap guard's evidence
            out["metadata"].setdefault("annotations", {})[keys.ANN_BACKUP_RECORDED] = recorded
    if out["kind"] == "ConfigMap":
        out["metadata"].setdefault("annotations", {})[keys.ANN_CONFIG_KEYS] = ",".join(sorted(out.get("data") or {}))
    return out


def held_dns_selector(want: Manifest, live: Manifest | None, pods: tuple[Manifest, ...]) -> Manifest:
    """A headless Service created before keys.LABEL_DNS keeps the selector it has while a pod it
    selects, serving or not yet drained, lacks the label: the new selector would take that pod's name
    out of DNS at once. The pods get the label in place (plan/pool.py) or with their replacement,
    and the selector follows on the pass that finds none without it; it is never narrowed back."""
    selector = (want.get("spec") or {}).get("selector") or {}
    live_selector = ((live or {}).get("spec") or {}).get("selector") or {}
    if live is None or keys.LABEL_DNS not in selector or keys.LABEL_DNS in live_selector:
        return want
    old = {k: v for k, v in selector.items() if k != keys.LABEL_DNS}
    # Label selection is exact string equality (compare.contains would equate "1Gi" and "1024Mi").
    unlabelled = [pod for pod in pods if all(facts.labels(pod).get(k) == v for k, v in old.items())
                  and keys.LABEL_DNS not in facts.labels(pod) and not facts.is_terminating(pod)
                  and drain_annotations.read_state(facts.annotations(pod)).state
                  is not keys.DrainState.READY_FOR_DELETION]
    if not unlabelled:
        return want
    out = copy.deepcopy(want)
    out["spec"]["selector"] = old
    return out


def dropped_config_keys(live: Manifest, want: Manifest) -> list[str]:
    """Data keys the engine applied to `live` (ANN_CONFIG_KEYS) that `want` no longer has; keys
    someone else added are not ours to drop."""
    recorded = facts.annotations(live).get(keys.ANN_CONFIG_KEYS) or ""
    ours = {k for k in recorded.split(",") if k}
    return sorted((ours & set(live.get("data") or {})) - set(want.get("data") or {}))


def prunable(obj: Manifest, owner: Manifest, shard_labels: dict[str, str]) -> bool:
    """The shard owns it: our ownerReference to this MultigresShard plus its shard and managed-by labels."""
    lab = facts.labels(obj)
    return (has_owner_ref(obj, owner) and lab.get(keys.LABEL_APP_MANAGED_BY) == keys.MANAGED_BY
            and all(lab.get(k) == v for k, v in shard_labels.items()) and not facts.is_terminating(obj))


def plan_prune(ctx: Context) -> list[Action]:
    owner = ctx.owner
    if owner is None:
        return []  # driven from vars: nothing proves an object is ours rather than a user's
    wanted = {(o["kind"], o["metadata"]["name"]) for o in ctx.desired.objects}
    shard_labels = labels.shard_selector(ctx.desired.shard)
    out = []
    for _api_version, kind in INFRA_KINDS:
        for obj in sorted(ctx.observed.others.get(kind, ()), key=facts.name):
            if (kind, facts.name(obj)) not in wanted and prunable(obj, owner, shard_labels):
                out.append(actions.prune(obj, "owned by this shard and no longer rendered"))
    return out


def _without_owner(obj: Manifest) -> Manifest:
    md = {k: v for k, v in obj["metadata"].items() if k != "ownerReferences"}
    return {**obj, "metadata": md}


def plan_generated_tls(ctx: Context) -> list[Action]:
    """`pgbackrestTLS.mode: auto`: the pods mount Secrets nobody else creates (seed 000 "pgBackRest
    TLS certificates: auto-generated"), issued, renewed and rotated per tls_policy. Only Secret
    metadata is observed, never key material. A renewal is also an Event on the shard."""
    gen = ctx.desired.generated_tls
    if gen is None:
        return []
    ca, leaf = ctx.observed.find("Secret", gen.ca_secret), ctx.observed.find("Secret", gen.tls_secret)
    decision = tls_policy.decide(gen, ca, leaf, ctx.now, ctx.observed.pods)
    if decision is None:
        return []
    out = [actions.generate_tls(gen, ctx.owner, decision.reason, decision.step)]
    if decision.renewal and ctx.observed.cr is not None:
        reason = "CARotation" if decision.step is not tls_policy.Step.ISSUE else "CertificateRenewed"
        out.append(ctx.event(ctx.observed.cr, "Normal", reason, decision.reason))
    return out


def plan_generated_password(ctx: Context) -> list[Action]:
    """No password Secret named in the spec: create the one the pods mount, once."""
    gen = ctx.desired.generated_password
    if gen is None or ctx.observed.find("Secret", gen.secret) is not None:
        return []
    what = (f"holding the password of the clone's source (Secret {gen.copy_from[0]})" if gen.copy_from
            else "(no postgresPasswordSecretRef in the spec)")
    return [actions.generate_password(gen, ctx.owner, f"create the superuser password Secret {gen.secret} {what}")]


def plan_infra(ctx: Context) -> list[Action]:
    out: list[Action] = []
    owner = ctx.owner
    for obj in ctx.desired.objects:
        want = infra_manifest(ctx, obj)
        kind, name = want["kind"], want["metadata"]["name"]
        live = ctx.observed.find(kind, name)
        if kind == "Service":
            want = held_dns_selector(want, live, ctx.observed.pods)
        if live is None and ctx.observed.find_foreign(kind, name) is not None:
            continue  # another owner's object holds the name: applying would take it over (ForeignObjects)
        if live is None:
            out.append(actions.apply(want, f"create {kind} {name}", Phase.INFRA))
            continue
        diff = compare.difference(live, _without_owner(want))
        wants_owner = bool(owner) and bool(want["metadata"].get("ownerReferences"))
        if diff is None and owner and wants_owner and not has_owner_ref(live, owner):
            diff = "metadata.ownerReferences"
        dropped = dropped_config_keys(live, want) if kind == "ConfigMap" else []
        if dropped:
            out.append(actions.apply(want, f"update {kind} {name}: drop data keys no longer rendered: "
                                           f"{', '.join(dropped)}", Phase.INFRA))
        elif diff:
            out.append(actions.apply(want, f"update {kind} {name}: {diff} differs from desired", Phase.INFRA))
        if kind == "PersistentVolumeClaim" and owner and not wants_owner and has_owner_ref(live, owner):
            out.append(actions.patch(live, owner_refs_patch(live, owner, keep=False),
                                     f"PVC {name}: owner reference removed, outlives the shard "
                                     "(whenDeleted=Retain)", Phase.INFRA))
    return out
