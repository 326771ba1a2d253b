"""What every renderer of one shard needs, computed once: ids, owner reference, config hash, TLS source."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core import keys, naming
from ..core.manifest import Manifest
from ..spec.postgres_conf import has_control_character
from . import layout, spechash

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import ContainerImages, MultigresShardSpec, SecretKeyRef


@dataclass(frozen=True)
class ShardContext:
    spec: MultigresShardSpec
    namespace: str
    sid: naming.ShardId
    owner_refs: tuple[Manifest, ...]
    # Folded into every pod's spec hash: the referenced template's hash, or our overrides' hash.
    postgres_config_hash: str
    project_ref: str
    password: SecretKeyRef
    images: ContainerImages
    # Names are asked for many times per shard (every pod mounts the same ConfigMaps and Secrets);
    # naming's FNV hashing in pure Python dominated rendering before this cache.
    _names: dict[tuple[object, ...], str] = field(default_factory=dict, compare=False, repr=False)

    def name(self, fn: Callable[..., str], *args: object) -> str:
        """`fn(self.sid, *args)` for a naming function, computed once per context."""
        key = (fn, *args)
        if key not in self._names:
            self._names[key] = fn(self.sid, *args)
        return self._names[key]

    @property
    def version(self) -> keys.MultigresVersion:
        return self.spec.multigres.version

    def meta(self, name: str, labels: Mapping[str, str], *, owned: bool = True) -> Manifest:
        meta: Manifest = {"name": name, "namespace": self.namespace, "labels": dict(labels)}
        if owned and self.owner_refs:
            meta["ownerReferences"] = [dict(ref) for ref in self.owner_refs]
        return meta


def owner_reference(owner: Mapping[str, str]) -> Manifest:
    """A controller reference to the MultigresShard `owner` (needs name and uid)."""
    return {
        "apiVersion": keys.API_GROUP_VERSION,
        "kind": keys.SHARD_KIND,
        "name": owner["name"],
        "uid": owner["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def postgres_conf_quote(name: str, value: str) -> str:
    """`value` as one postgresql.conf string literal: inside single quotes the server reads `''` as
    a quote and a backslash as the start of an escape (\\n, \\t, octal), so both are doubled. A raw
    line break would end the setting and start another of the writer's choosing: the model refuses
    control characters (rule postgres-config-single-line) and so does this, for callers that skip it."""
    if has_control_character(value):
        raise ValueError(f"postgresConfig.{name}: a value must be one line without control characters")
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def postgres_config_text(spec: MultigresShardSpec) -> str:
    """The postgresql.conf fragment from `postgresConfig` overrides, one sorted `name = 'value'` per line."""
    config = spec.postgres_config
    return "".join(f"{name} = {postgres_conf_quote(name, config[name])}\n" for name in sorted(config))


def build_context(
    spec: MultigresShardSpec,
    namespace: str,
    *,
    owner: Mapping[str, str] | None = None,
    referenced_config_hash: str = "",
    project_ref: str | None = None,
) -> ShardContext:
    """`referenced_config_hash`: `spechash.config_hash` of the postgresConfigRef's ConfigMap value,
    read by the caller (render is pure and never reads the cluster)."""
    parts = [referenced_config_hash] if spec.postgres_config_ref else []
    if spec.postgres_config:
        parts.append(spechash.config_hash(postgres_config_text(spec)))
    return ShardContext(
        spec=spec,
        namespace=namespace,
        sid=spec.shard_id,
        owner_refs=(owner_reference(owner),) if owner else (),
        postgres_config_hash="+".join(parts),
        project_ref=project_ref or spec.cluster_name,
        password=spec.password_secret(),
        images=spec.container_images(),
    )


def cert_volume(ctx: ShardContext) -> Manifest:
    """The projected pgBackRest certificate volume (mode 0440) for the shard's TLS mode."""
    tls = ctx.spec.backup.pgbackrest_tls
    renamed = [{"key": "tls.crt", "path": "pgbackrest.crt"}, {"key": "tls.key", "path": "pgbackrest.key"}]
    ca = [{"key": "ca.crt", "path": "ca.crt"}]
    if tls.mode == "auto":
        sources: list[Manifest] = [
            {"secret": {"name": ctx.name(naming.pgbackrest_ca_secret_name), "items": ca}},
            {"secret": {"name": ctx.name(naming.pgbackrest_tls_secret_name), "items": renamed}},
        ]
    else:
        name = tls.secret_name if tls.mode == "secret" else ctx.name(naming.pgbackrest_tls_secret_name)
        sources = [{"secret": {"name": name, "items": [*ca, *renamed]}}]
    return {"name": layout.VOL_CERTS, "projected": {"defaultMode": 0o440, "sources": sources}}
