"""The operator's allow-list for the spec fields that let a MultigresShard author escalate: the
images its pods run, the ServiceAccount they run as, and the Secrets they mount.

Whoever may create a MultigresShard may otherwise run any image, under any ServiceAccount of the
namespace, with any Secret of the namespace mounted into a pod they can read logs of. The operator's
administrator lists what is allowed (operator flags --allowed-images, --allowed-service-accounts,
--allowed-secrets, or the matching environment variables; module arguments allowed_images, ...);
a spec using anything else is refused like an invalid spec (ConfigurationValid=False, Stalled=True,
phase Degraded) with the field and the value named, and no object is touched.

An entry is an exact value, or a prefix ending in `*` (`ghcr.io/multigres/*`). An empty list allows
everything of its kind: the engine also runs from a playbook whose author already holds the
cluster credentials, and a non-empty default would have to name every registry mirror and every
image of every Multigres version. What is never checked: images the spec leaves unset (the
operator's own defaults for `spec.multigres.version`) and the Secrets the engine generates itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from . import model

# The environment variables the operator reads its allow-lists from (comma-separated).
ENV_ALLOWED_IMAGES = "MULTIGRES_POOLS_ALLOWED_IMAGES"
ENV_ALLOWED_SERVICE_ACCOUNTS = "MULTIGRES_POOLS_ALLOWED_SERVICE_ACCOUNTS"
ENV_ALLOWED_SECRETS = "MULTIGRES_POOLS_ALLOWED_SECRETS"

_IMAGE_FIELDS = ("multipooler", "multiorch", "multigateway", "postgres", "postgresExporter")


def parse_list(text: str | None) -> tuple[str, ...]:
    """`a, b,,c` -> ("a", "b", "c")."""
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def _allowed(value: str, entries: tuple[str, ...]) -> bool:
    return not entries or any(value.startswith(e[:-1]) if e.endswith("*") else value == e for e in entries)


@dataclass(frozen=True)
class SpecPolicy:
    images: tuple[str, ...] = ()
    service_accounts: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, images: Iterable[str] | None = None, service_accounts: Iterable[str] | None = None,
           secrets: Iterable[str] | None = None) -> SpecPolicy:
        return cls(*(tuple(str(v) for v in (values or ()) if str(v)) for values in (images, service_accounts, secrets)))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SpecPolicy:
        return cls(parse_list(env.get(ENV_ALLOWED_IMAGES)), parse_list(env.get(ENV_ALLOWED_SERVICE_ACCOUNTS)),
                   parse_list(env.get(ENV_ALLOWED_SECRETS)))

    def environment(self) -> dict[str, str]:
        """The environment variables that carry this policy to the playbook runs."""
        return {ENV_ALLOWED_IMAGES: ",".join(self.images),
                ENV_ALLOWED_SERVICE_ACCOUNTS: ",".join(self.service_accounts),
                ENV_ALLOWED_SECRETS: ",".join(self.secrets)}

    @property
    def empty(self) -> bool:
        return not (self.images or self.service_accounts or self.secrets)

    def problems(self, spec: model.MultigresShardSpec) -> list[str]:
        """Every field of `spec` whose value the allow-lists do not admit, field path first."""
        if self.empty:
            return []
        out = []
        for path, value in escalating_fields(spec):
            kind, entries = (("image", self.images) if path.startswith("spec.images.") and "PullSecrets" not in path
                             else ("ServiceAccount", self.service_accounts) if path.endswith("serviceAccountName")
                             else ("Secret", self.secrets))
            if not _allowed(value, entries):
                out.append(f"{path}: {kind} {value!r} is not allowed by the operator's configuration "
                           f"(allowed: {', '.join(entries)})")
        return out


def escalating_fields(spec: model.MultigresShardSpec) -> list[tuple[str, str]]:
    """(field path, value) of every image, ServiceAccount and Secret the spec sets."""
    data: dict[str, Any] = spec.model_dump(by_alias=True, exclude_none=True)
    images = data.get("images") or {}
    defaults = model.Images.model_validate({}).model_dump(by_alias=True, exclude_none=True)
    out = [(f"spec.images.{f}", images[f]) for f in _IMAGE_FIELDS if images.get(f) and images[f] != defaults.get(f)]
    out += [(f"spec.images.imagePullSecrets[{i}].name", ref["name"])
            for i, ref in enumerate(images.get("imagePullSecrets") or [])]
    backup = data.get("backup") or {}
    s3 = backup.get("s3") or {}
    if s3.get("serviceAccountName"):
        out.append(("spec.backup.s3.serviceAccountName", s3["serviceAccountName"]))
    if s3.get("credentialsSecret"):
        out.append(("spec.backup.s3.credentialsSecret", s3["credentialsSecret"]))
    tls = backup.get("pgbackrestTLS") or {}
    if tls.get("secretName"):
        out.append(("spec.backup.pgbackrestTLS.secretName", tls["secretName"]))
    grpc_tls = (data.get("security") or {}).get("grpcTLS") or {}
    if grpc_tls.get("secretName"):
        out.append(("spec.security.grpcTLS.secretName", grpc_tls["secretName"]))
    ref = data.get("postgresPasswordSecretRef") or {}
    if ref.get("name"):
        out.append(("spec.postgresPasswordSecretRef.name", ref["name"]))
    return out
