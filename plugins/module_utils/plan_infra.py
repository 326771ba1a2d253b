"""Shared infrastructure: everything but pool pods and data PVCs (headless Services, PDBs,
ConfigMaps, backup PVCs, MultiOrch, TLS material). Always present, applied only when the live
object differs (seed 000 "Resource Topology", "Pod Disruption Budgets")."""

from __future__ import annotations

from typing import Any

from . import actions, compare, facts, keys
from .actions import Action, Phase
from .desired import Desired, PVCPolicy
from .plan_context import Context, has_owner_ref, owner_refs_patch

Manifest = dict[str, Any]


def shared_pvc_policy(desired: Desired) -> PVCPolicy:
    """On shard deletion, the backup PVC (the only copy of the backups) is deleted only when every
    pool's whenDeleted is Delete."""
    if desired.pools and all(p.when_deleted is PVCPolicy.DELETE for p in desired.pools):
        return PVCPolicy.DELETE
    return PVCPolicy.RETAIN


def infra_manifest(ctx: Context, obj: Manifest) -> Manifest:
    """Every shared object is owned by the shard CR, except a PVC the renderer left unowned
    (the backup PVC follows whenDeleted)."""
    owned = obj["kind"] != "PersistentVolumeClaim" or bool(facts.meta(obj).get("ownerReferences"))
    return ctx.owned(obj, owner=owned)


def _without_owner(obj: Manifest) -> Manifest:
    md = {k: v for k, v in obj["metadata"].items() if k != "ownerReferences"}
    return {**obj, "metadata": md}


def plan_generated_tls(ctx: Context) -> list[Action]:
    """`pgbackrestTLS.mode: auto`: the pods mount Secrets nobody else creates (seed 000 "pgBackRest
    TLS certificates: auto-generated"). Only Secret metadata is observed, never key material."""
    gen = ctx.desired.generated_tls
    if gen is None:
        return []
    ca, leaf = ctx.observed.find("Secret", gen.ca_secret), ctx.observed.find("Secret", gen.tls_secret)
    if ca is not None and leaf is not None and facts.annotations(leaf).get(keys.ANN_TLS_FINGERPRINT) == gen.fingerprint:
        return []
    if ca is None:
        reason = f"create pgBackRest CA Secret {gen.ca_secret} and certificate Secret {gen.tls_secret} (mode auto)"
    elif leaf is None:
        reason = f"issue pgBackRest certificate Secret {gen.tls_secret} from CA {gen.ca_secret} (mode auto)"
    else:
        reason = f"re-issue pgBackRest certificate Secret {gen.tls_secret}: the pool pods' names changed"
    return [actions.generate_tls(gen, ctx.owner, reason)]


def plan_generated_password(ctx: Context) -> list[Action]:
    """No password Secret named in the spec: create the one the pods mount, once."""
    gen = ctx.desired.generated_password
    if gen is None or ctx.observed.find("Secret", gen.secret) is not None:
        return []
    return [actions.generate_password(gen, ctx.owner, f"create the superuser password Secret {gen.secret} "
                                      "(no postgresPasswordSecretRef in the spec)")]


def plan_infra(ctx: Context) -> list[Action]:
    out: list[Action] = []
    owner = ctx.owner
    for obj in ctx.desired.objects:
        want = infra_manifest(ctx, obj)
        kind, name = want["kind"], want["metadata"]["name"]
        live = ctx.observed.find(kind, name)
        if live is None:
            out.append(actions.apply(want, f"create {kind} {name}", Phase.INFRA))
            continue
        diff = compare.difference(live, _without_owner(want))
        wants_owner = bool(owner) and bool(want["metadata"].get("ownerReferences"))
        if diff is None and owner and wants_owner and not has_owner_ref(live, owner):
            diff = "metadata.ownerReferences"
        if diff:
            out.append(actions.apply(want, f"update {kind} {name}: {diff} differs from desired", Phase.INFRA))
        if kind == "PersistentVolumeClaim" and owner and not wants_owner and has_owner_ref(live, owner):
            out.append(actions.patch(live, owner_refs_patch(live, owner, keep=False),
                                     f"PVC {name}: owner reference removed, outlives the shard "
                                     "(whenDeleted=Retain)", Phase.INFRA))
    return out
