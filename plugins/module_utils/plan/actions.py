"""What the planner asks for: one write each, with the object it touches and why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from ..core.manifest import Manifest
from ..state.desired import GeneratedPassword, GeneratedTLS


class Verb(StrEnum):
    APPLY = "apply"  # server-side apply of `body` (creates the object when it is missing)
    PATCH = "patch"  # JSON merge patch `body`, refused by the server if `resource_version` moved on
    UNFINALIZE = "unfinalize"  # remove the finalizer named in `body["finalizer"]`
    DELETE = "delete"  # with uid and resourceVersion preconditions
    PRUNE = "prune"  # a delete of a shared object that left the desired set (same preconditions)
    EVENT = "event"  # record a Kubernetes Event on the object
    GENERATE_TLS = "generate-tls"  # create the CA Secret if missing, (re)issue the certificate Secret
    GENERATE_PASSWORD = "generate-password"  # create the superuser password Secret (never rewritten)


class Phase(IntEnum):
    """Execution order inside one pass: infrastructure, then PVCs before the pods that mount them."""

    SHARD = 0
    INFRA = 1
    PVC = 2
    POD = 3
    ANNOTATE = 4
    DELETE_POD = 5
    DELETE_PVC = 6
    DELETE_OTHER = 7
    RELEASE = 8
    EVENT = 9


@dataclass(frozen=True)
class Action:
    verb: Verb
    kind: str
    name: str
    reason: str
    phase: Phase
    api_version: str = "v1"
    body: Manifest | None = field(default=None, compare=False)
    uid: str | None = None
    resource_version: str | None = None
    # Events only: Normal or Warning, and the event's reason (CamelCase).
    event_type: str | None = None
    event_reason: str | None = None
    # Deletes only: the annotations that are the reason for the delete. When the object changed
    # since it was read (409), it is read again and deleted if these still hold: a kubelet's status
    # update does not undo a finished drain, and a replan would cost a whole pass.
    still_annotated: tuple[tuple[str, str], ...] = ()
    # A record the pass's later actions depend on (a restore drill's or a clone copy's, written before
    # its pod is made): when it conflicts (409) the pass ends there, so no pod exists without its record.
    guards_rest: bool = False

    def describe(self) -> str:
        if self.verb is Verb.EVENT:
            return f"event {self.event_type} {self.event_reason} on {self.kind} {self.name}: {self.reason}"
        if self.verb is Verb.PRUNE:
            return f"prune {self.kind}/{self.name}: {self.reason}"
        return f"{self.verb} {self.kind} {self.name}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verb": str(self.verb), "kind": self.kind, "name": self.name,
                               "reason": self.reason}
        if self.verb is Verb.EVENT:
            out["event"] = {"type": self.event_type, "reason": self.event_reason}
        return out


def apply(obj: Manifest, reason: str, phase: Phase) -> Action:
    md = obj["metadata"]
    return Action(Verb.APPLY, obj["kind"], md["name"], reason, phase, obj.get("apiVersion", "v1"), obj)


def patch(live: Manifest, body: Manifest, reason: str, phase: Phase, *, conditional: bool = True) -> Action:
    md = live["metadata"]
    return Action(Verb.PATCH, live["kind"], md["name"], reason, phase, live.get("apiVersion", "v1"), body,
                  md.get("uid"), md.get("resourceVersion") if conditional else None)


def unfinalize(live: Manifest, finalizer: str, reason: str, phase: Phase) -> Action:
    md = live["metadata"]
    return Action(Verb.UNFINALIZE, live["kind"], md["name"], reason, phase, live.get("apiVersion", "v1"),
                  {"finalizer": finalizer, "finalizers": list(md.get("finalizers") or [])}, md.get("uid"))


def delete(live: Manifest, reason: str, phase: Phase, *, still_annotated: Mapping[str, str] | None = None) -> Action:
    md = live["metadata"]
    return Action(Verb.DELETE, live["kind"], md["name"], reason, phase, live.get("apiVersion", "v1"), None,
                  md.get("uid"), md.get("resourceVersion"), still_annotated=tuple((still_annotated or {}).items()))


def prune(live: Manifest, reason: str) -> Action:
    """Delete a shared object the shard owns but no longer renders (plan_infra.plan_prune)."""
    md = live["metadata"]
    return Action(Verb.PRUNE, live["kind"], md["name"], reason, Phase.DELETE_OTHER, live.get("apiVersion", "v1"),
                  None, md.get("uid"), md.get("resourceVersion"))


def generate_tls(gen: GeneratedTLS, owner: Manifest | None, reason: str, step: str = "issue") -> Action:
    """The key material is made by the apply step; the action carries only names and the
    tls_policy step (issue, stage-ca or promote-ca)."""
    return Action(Verb.GENERATE_TLS, "Secret", gen.tls_secret, reason, Phase.INFRA,
                  body={"tls": gen, "step": step, "ownerReferences": [owner] if owner else []})


def generate_password(gen: GeneratedPassword, owner: Manifest | None, reason: str) -> Action:
    """The value is made by the apply step; the action carries only the Secret's name."""
    return Action(Verb.GENERATE_PASSWORD, "Secret", gen.secret, reason, Phase.INFRA,
                  body={"password": gen, "ownerReferences": [owner] if owner else []})


def event(target: Manifest, event_type: str, event_reason: str, message: str) -> Action:
    """An Event about `target` (the shard CR, or the pod/PVC when there is no CR)."""
    md = target.get("metadata") or {}
    return Action(Verb.EVENT, target.get("kind", ""), md.get("name", ""), message, Phase.EVENT,
                  target.get("apiVersion", "v1"), None, md.get("uid"), None, event_type, event_reason)
