"""Turn planned actions into API requests.

- Objects are written by server-side apply with one field manager (keys.FIELD_MANAGER).
- Annotation and ownerReference changes are JSON merge patches that carry the resourceVersion we
  planned from, so a stale view gets a 409 instead of overwriting someone else's change.
- Deletes carry uid and resourceVersion preconditions: a recreated or changed object is never
  deleted by mistake.
- Finalizers are removed with a JSON patch that first tests the list position it removes.
- Check mode sends every write as a server-side dry run (events are not sent at all).
A 409 is not an error: the next pass plans again from fresh state.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import os
import secrets
import socket
from dataclasses import dataclass, replace
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from ..plan.actions import Action, Verb
from ..state import facts
from ..state.desired import GeneratedPassword, GeneratedTLS
from . import events
from .client import KubeClient, KubeError

REPORTER = "multigres-pools"


@dataclass
class Outcome:
    action: Action
    result: str  # done | conflict | gone | failed | skipped
    message: str = ""
    after: Manifest | None = None

    def as_dict(self) -> dict[str, Any]:
        out = self.action.as_dict()
        out["result"] = self.result
        if self.message:
            out["message"] = self.message
        return out


def event_manifest(action: Action, namespace: str, stamp: str) -> Manifest:
    involved = {"apiVersion": action.api_version, "kind": action.kind, "name": action.name,
                "namespace": namespace, "uid": action.uid}
    return events.event_manifest(involved, action.event_type or "Normal", action.event_reason or "", action.reason,
                                 component=REPORTER, instance=os.environ.get("HOSTNAME") or socket.gethostname(),
                                 stamp=stamp)


class Applier:
    def __init__(self, client: KubeClient, namespace: str, *, dry_run: bool, stamp: str) -> None:
        self.client, self.namespace, self.dry_run, self.stamp = client, namespace, dry_run, stamp

    def run(self, planned: list[Action]) -> list[Outcome]:
        """Execute in order; stop at the first real failure (later steps may depend on it), and at a
        conflict on a record later steps depend on (Action.guards_rest)."""
        outcomes = []
        for action in planned:
            outcome = self._one(action)
            outcomes.append(outcome)
            if outcome.result == "failed" or (outcome.result == "conflict" and action.guards_rest):
                break
        return outcomes

    def _one(self, action: Action) -> Outcome:
        try:
            return Outcome(action, *self._send(action))
        except KubeError as exc:
            if exc.status == 409:
                again = self._still_wanted(action)
                if again is not None:
                    return self._one(again)
                return Outcome(action, "conflict", f"changed since it was read; replanned next pass ({exc.message})")
            if exc.status == 404:
                return Outcome(action, "gone", "already gone")
            return Outcome(action, "failed", exc.message)

    def _still_wanted(self, action: Action) -> Action | None:
        """A delete refused because its object changed: the same delete against the object as it is
        now, if it is the same object, not terminating, and its `still_annotated` reasons hold. Once:
        the retry carries the new resourceVersion and no reasons, so another change is a conflict."""
        if action.verb is not Verb.DELETE or not action.still_annotated:
            return None
        live = self.client.get(action.api_version, action.kind, self.namespace, action.name)
        if live is None or facts.uid(live) != action.uid or facts.is_terminating(live):
            return None
        if any(facts.annotations(live).get(k) != v for k, v in action.still_annotated):
            return None
        return replace(action, resource_version=live["metadata"].get("resourceVersion"), still_annotated=())

    def _send(self, action: Action) -> tuple[str, str, Manifest | None]:
        ns = None if action.kind == "Namespace" else self.namespace
        client, dry = self.client, self.dry_run
        if action.verb is Verb.APPLY:
            return "done", "", client.apply(action.body or {}, keys.FIELD_MANAGER, dry_run=dry)
        if action.verb is Verb.PATCH:
            body = copy.deepcopy(action.body or {})
            if action.resource_version:
                body.setdefault("metadata", {})["resourceVersion"] = action.resource_version
            return "done", "", client.merge_patch(action.api_version, action.kind, ns, action.name, body,
                                                  field_manager=keys.FIELD_MANAGER, dry_run=dry)
        if action.verb in (Verb.DELETE, Verb.PRUNE):
            after = client.delete(action.api_version, action.kind, ns, action.name, uid=action.uid,
                                  resource_version=action.resource_version, dry_run=dry)
            return ("done" if after is not None else "gone"), "", after
        if action.verb is Verb.UNFINALIZE:
            return self._unfinalize(action, ns)
        if action.verb is Verb.GENERATE_TLS:
            return self._generate_tls(action)
        if action.verb is Verb.GENERATE_PASSWORD:
            return self._generate_password(action)
        if dry:
            return "skipped", "events are not recorded in check mode", None
        return "done", "", client.create(event_manifest(action, self.namespace, self.stamp),
                                         field_manager=keys.FIELD_MANAGER)

    def _secret(self, name: str, data: dict[str, str], gen: GeneratedTLS | GeneratedPassword, owners: list[Manifest],
                annotations: dict[str, str] | None = None) -> Manifest:
        meta: Manifest = {"name": name, "namespace": self.namespace, "labels": dict(gen.labels)}
        if owners:
            meta["ownerReferences"] = owners
        if annotations:
            meta["annotations"] = annotations
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": data}

    def _generate_tls(self, action: Action) -> tuple[str, str, Manifest | None]:
        """Key material is made here and goes straight into Secrets; nothing of it is returned. The
        CA Secret is re-read and patched with its resourceVersion: a concurrent change is a 409."""
        # Imported here: cryptography costs more to import than a whole no-op pass takes.
        from ..plan.tls_policy import Step
        from . import tls
        body = action.body or {}
        gen: GeneratedTLS = body["tls"]
        owners = body.get("ownerReferences") or []
        now = facts.parse_time(self.stamp) or dt.datetime.now(dt.UTC)  # the pass's clock
        ca = self.client.get("v1", "Secret", self.namespace, gen.ca_secret)
        try:
            renewal = tls.renew(Step(body.get("step") or Step.ISSUE), (ca.get("data") or {}) if ca else None,
                                gen.common_name, gen.dns_names, now)
        except ValueError as exc:
            return "failed", (f"Secret {gen.ca_secret}: {exc}; delete it to have a new CA generated, or switch "
                              "pgbackrestTLS.mode to 'secret'"), None
        if ca is None:
            kept = {k: v for k, v in (renewal.ca_data or {}).items() if v is not None}
            notes = {k: v for k, v in renewal.ca_annotations.items() if v is not None}
            ca = self._create_secret(self._secret(gen.ca_secret, kept, gen, owners, notes))
        elif renewal.ca_data is not None or any(facts.annotations(ca).get(k) != v
                                                for k, v in renewal.ca_annotations.items()):
            patch: Manifest = {"metadata": {"resourceVersion": facts.meta(ca).get("resourceVersion"),
                                            "annotations": renewal.ca_annotations}}
            if renewal.ca_data is not None:
                patch["data"] = renewal.ca_data
            ca = self.client.merge_patch("v1", "Secret", self.namespace, gen.ca_secret, patch,
                                         field_manager=keys.FIELD_MANAGER, dry_run=self.dry_run)
        secret = self._secret(gen.tls_secret, renewal.leaf_data, gen, owners,
                              {keys.ANN_TLS_FINGERPRINT: gen.fingerprint, **renewal.leaf_annotations})
        leaf_after = self.client.apply(secret, keys.FIELD_MANAGER, dry_run=self.dry_run)
        return "done", "", secrets_metadata(ca, leaf_after)

    def _generate_password(self, action: Action) -> tuple[str, str, Manifest | None]:
        """Created once, never updated: a Secret that already exists (ours or the user's) is kept."""
        body = action.body or {}
        gen: GeneratedPassword = body["password"]
        value = base64.b64encode(secrets.token_urlsafe(32).encode()).decode()
        if gen.copy_from is not None:  # a clone: the source's password, which its restored users have
            name, key = gen.copy_from
            source = self.client.get("v1", "Secret", self.namespace, name)
            value = ((source or {}).get("data") or {}).get(key) or ""
            if not value:
                return "failed", (f"spec.backup.cloneFrom: the source's password Secret {name} "
                                  f"{'has no key ' + repr(key) if source else 'does not exist'}: the clone "
                                  "cannot log in to the restored server without it"), None
        secret = self._secret(gen.secret, {gen.key: value}, gen, body.get("ownerReferences") or [])
        try:
            created = self._create_secret(secret)
        except KubeError as exc:
            if exc.status != 409:
                raise
            return "done", "already exists", None
        return "done", "", secrets_metadata(created)

    def _create_secret(self, secret: Manifest) -> Manifest:
        """POST, then drop a repeated ownerReference: the operator-sdk Ansible Operator's proxy appends
        the shard's to every object created through it, also to one that carries it already."""
        created = self.client.create(secret, field_manager=keys.FIELD_MANAGER, dry_run=self.dry_run)
        owners = facts.meta(created).get("ownerReferences") or []
        once: list[Manifest] = []
        for owner in owners:  # the first of each uid: ours, which names the shard as controller
            if all(o.get("uid") != owner.get("uid") for o in once):
                once.append(owner)
        if len(once) == len(owners):
            return created
        ops = [{"op": "test", "path": "/metadata/ownerReferences", "value": owners},
               {"op": "replace", "path": "/metadata/ownerReferences", "value": once}]
        return self.client.json_patch("v1", "Secret", self.namespace, facts.name(created), ops,
                                      field_manager=keys.FIELD_MANAGER, dry_run=self.dry_run)

    def _unfinalize(self, action: Action, ns: str | None) -> tuple[str, str, Manifest | None]:
        name, finalizer = action.name, (action.body or {})["finalizer"]
        current = list((action.body or {}).get("finalizers") or [])
        for attempt in (1, 2):
            if finalizer not in current:
                return "done", "finalizer already removed", None
            at = f"/metadata/finalizers/{current.index(finalizer)}"
            ops = [{"op": "test", "path": at, "value": finalizer}, {"op": "remove", "path": at}]
            try:
                return "done", "", self.client.json_patch(action.api_version, action.kind, ns, name, ops,
                                                          field_manager=keys.FIELD_MANAGER, dry_run=self.dry_run)
            except KubeError as exc:
                if exc.status not in (409, 422) or attempt == 2:
                    raise
                live = self.client.get(action.api_version, action.kind, ns, name)
                if live is None or (action.uid and facts.uid(live) != action.uid):
                    return "gone", "already gone", None
                current = facts.finalizers(live)
        raise AssertionError("unreachable")


def secrets_metadata(*secrets: Manifest | None) -> Manifest:
    """What a pass may keep of Secrets it wrote: their metadata, never their data."""
    items = [{"apiVersion": "v1", "kind": "Secret",
              "metadata": {k: v for k, v in (s.get("metadata") or {}).items() if k != "managedFields"}}
             for s in secrets if s]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def write_status(client: KubeClient, cr: Manifest, status: Manifest, *, dry_run: bool) -> Manifest:
    """Server-side apply of the status subresource with the status field manager."""
    body = {"apiVersion": cr["apiVersion"], "kind": cr["kind"],
            "metadata": {"name": facts.name(cr), "namespace": facts.meta(cr).get("namespace")},
            "status": status}
    return client.apply(body, keys.STATUS_FIELD_MANAGER, dry_run=dry_run, subresource="status")
