"""Building blocks every renderer shares: ports, probes, security contexts, env entries, scheduling."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import keys
from ..core.manifest import Manifest
from ..state import repository as state_repository
from ..state.repository import Repository
from . import layout
from .context import ShardContext

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import Resources, Storage


def port(name: str, number: int) -> Manifest:
    # protocol is explicit: it is part of the list-map key server-side apply uses for ports.
    return {"name": name, "containerPort": number, "protocol": "TCP"}


def svc_port(name: str, number: int, target: int | None = None) -> Manifest:
    return {"name": name, "port": number, "targetPort": number if target is None else target, "protocol": "TCP"}


def http_probe(path: str, port_number: int, period: int, failures: int | None = None) -> Manifest:
    probe: Manifest = {"httpGet": {"path": path, "port": port_number}, "periodSeconds": period}
    if failures is not None:
        probe["failureThreshold"] = failures
    return probe


def probes(path_ready: str, path_live: str, port_number: int) -> Manifest:
    """Startup (5 s x 30), liveness (10 s) and readiness (5 s) probes, as the Go operator sets them."""
    return {
        "startupProbe": http_probe(path_ready, port_number, 5, 30),
        "livenessProbe": http_probe(path_live, port_number, 10),
        "readinessProbe": http_probe(path_ready, port_number, 5),
    }


def container_security(run_as: int | None) -> Manifest:
    """The `restricted` Pod Security Standard for one container."""
    sc: Manifest = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if run_as is not None:
        sc["runAsUser"] = run_as
        sc["runAsGroup"] = run_as
    return sc


def pod_security(fs_group: int | None) -> Manifest:
    sc: Manifest = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if fs_group is not None:
        sc["fsGroup"] = fs_group
    return sc


def resources(res: Resources) -> Manifest:
    return {k: dict(v) for k, v in (("requests", res.requests), ("limits", res.limits)) if v}


def secret_env(name: str, secret: str, key: str) -> Manifest:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def field_env(name: str, field_path: str) -> Manifest:
    """An env entry from the downward API; apiVersion is spelled out so a re-apply changes nothing."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}}


def repository(ctx: ShardContext) -> Repository:
    """The shard's pgBackRest repository as v0.1.0 names it (state/repository.py)."""
    backup = ctx.spec.backup
    if backup.type == "s3" and backup.s3 is not None:
        s3 = backup.s3
        return state_repository.s3(s3.bucket, s3.region, s3.endpoint, s3.key_prefix, s3.env_credentials)
    return state_repository.posix(backup.filesystem.path)


def repository_mounts(repo: Repository) -> list[Manifest]:
    """The backup volume, read-only where the repository names it: a filesystem repository's only."""
    return [] if repo.s3 else [{"name": layout.VOL_BACKUP, "mountPath": repo.location, "readOnly": True}]


def s3_env(ctx: ShardContext) -> list[Manifest]:
    s3 = ctx.spec.backup.s3 if ctx.spec.backup.type == "s3" else None
    if s3 is None:
        return []
    env = [{"name": "AWS_REGION", "value": s3.region}]
    if s3.credentials_secret:
        env += [secret_env(k, s3.credentials_secret, k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    return env


def exporter(ctx: ShardContext) -> Manifest:
    """The postgres-exporter container (both versions), scraping PostgreSQL over localhost; v0.1.0
    pods name its binary like every other one, era A keeps the Go operator's (image entrypoint)."""
    password = ctx.password
    command = {"command": [layout.EXPORTER_BIN]} if ctx.version is keys.MultigresVersion.V0_1_0 else {}
    return {
        "name": "postgres-exporter",
        "image": ctx.images.postgres_exporter,
        "imagePullPolicy": ctx.spec.images.image_pull_policy,
        **command,
        "args": [f"--web.listen-address=:{layout.EXPORTER}"],
        "ports": [port("metrics", layout.EXPORTER)],
        "env": [
            {"name": "DATA_SOURCE_URI", "value": f"localhost:{layout.POSTGRES}/postgres?sslmode=disable"},
            {"name": "DATA_SOURCE_USER", "value": ctx.spec.postgres_superuser},
            secret_env("DATA_SOURCE_PASS", password.name, password.key),
        ],
        "securityContext": container_security(layout.EXPORTER_UID),
    }


def scheduling(ctx: ShardContext, cell: str, extra_selector: dict[str, str], affinity: Any,
               tolerations: list[Any]) -> Manifest:
    """nodeSelector (cell topology wins over extras), affinity, tolerations and pull secrets."""
    out: Manifest = {}
    selector = {**extra_selector, **ctx.spec.cell_topology_labels.get(cell, {})}
    if selector:
        out["nodeSelector"] = selector
    if affinity:
        out["affinity"] = affinity
    if tolerations:
        out["tolerations"] = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tolerations]
    if ctx.spec.images.image_pull_secrets:
        out["imagePullSecrets"] = [{"name": s.name} for s in ctx.spec.images.image_pull_secrets]
    return out


def pvc_spec(storage: Storage) -> Manifest:
    spec: Manifest = {
        "accessModes": list(storage.access_modes),
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.class_:
        spec["storageClassName"] = storage.class_
    return spec


# --- pool pods (both versions) ---------------------------------------------------------------------
def postgres_env(ctx: ShardContext, password: Manifest) -> list[Manifest]:
    """What pgctld and multipooler both read: PGDATA, the superuser, its password (`password`, an env
    entry), and the S3 settings."""
    return [
        {"name": "PGDATA", "value": layout.PGDATA},
        {"name": "POSTGRES_USER", "value": ctx.spec.postgres_superuser},
        password,
        *s3_env(ctx),
    ]


def pool_mounts(ctx: ShardContext, *extra: Manifest) -> list[Manifest]:
    return [
        {"name": layout.VOL_DATA, "mountPath": layout.POOLER_DIR},
        {"name": layout.VOL_BACKUP, "mountPath": ctx.spec.backup.filesystem.path},
        {"name": layout.VOL_SOCKET, "mountPath": layout.SOCKET_DIR},
        *extra,
        {"name": layout.VOL_CERTS, "mountPath": layout.CERT_DIR, "readOnly": True},
    ]


def pgctld_config(ctx: ShardContext) -> tuple[list[str], list[Manifest], list[Manifest]]:
    """pgctld's optional configuration: (args, env, read-only mounts) for postgresConfigRef,
    postgresConfig and initdbArgs, plus the pg_hba template every pgctld reads."""
    spec = ctx.spec
    args: list[str] = []
    env: list[Manifest] = []
    mounts = [{"name": layout.VOL_PG_HBA, "mountPath": layout.PGCTLD_CONFIG_DIR, "readOnly": True}]
    if spec.postgres_config_ref:
        args.append(f"--postgres-config-template={layout.PG_CONFIG_TEMPLATE_DIR}/{layout.PG_CONFIG_TEMPLATE_FILE}")
        mounts.append({"name": layout.VOL_PG_CONFIG_TEMPLATE, "mountPath": layout.PG_CONFIG_TEMPLATE_DIR,
                       "readOnly": True})
    if spec.postgres_config:
        env.append({"name": "POSTGRES_INITDB_EXTRA_CONF",
                    "value": f"{layout.PG_EXTRA_CONFIG_DIR}/{layout.PG_EXTRA_CONFIG_KEY}"})
        mounts.append({"name": layout.VOL_PG_EXTRA_CONFIG, "mountPath": layout.PG_EXTRA_CONFIG_DIR,
                       "readOnly": True})
    if spec.initdb_args:
        env.append({"name": "POSTGRES_INITDB_ARGS", "value": spec.initdb_args})
    return args, env, mounts
