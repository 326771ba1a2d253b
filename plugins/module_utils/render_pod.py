"""Pool pods and their data PVCs (contract §3.9, era A), with our finalizer and index label.

A pod is built from its per-index values (name, service id, claim); the spec hash is computed once
per pool and cell over the same builder fed with placeholders, so it never depends on the index.
"""

from __future__ import annotations

from typing import Any

from . import keys, labels, layout, naming, spechash
from .model import Pool, Resources, Storage
from .render_context import Manifest, ShardContext, cert_volume

_PLACEHOLDER_POD = "$(POD_NAME)"
_PLACEHOLDER_SERVICE_ID = "$(SERVICE_ID)"
_PLACEHOLDER_CLAIM = "$(DATA_PVC)"


def _port(name: str, number: int) -> Manifest:
    # protocol is explicit: it is part of the list-map key server-side apply uses for ports.
    return {"name": name, "containerPort": number, "protocol": "TCP"}


def _http_probe(path: str, port: int, period: int, failures: int | None = None) -> Manifest:
    probe: Manifest = {"httpGet": {"path": path, "port": port}, "periodSeconds": period}
    if failures is not None:
        probe["failureThreshold"] = failures
    return probe


def probes(path_ready: str, path_live: str, port: int) -> Manifest:
    """Startup (5 s x 30), liveness (10 s) and readiness (5 s) probes, as the Go operator sets them."""
    return {
        "startupProbe": _http_probe(path_ready, port, 5, 30),
        "livenessProbe": _http_probe(path_live, port, 10),
        "readinessProbe": _http_probe(path_ready, port, 5),
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


def _secret_env(name: str, secret: str, key: str) -> Manifest:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _common_env(ctx: ShardContext) -> list[Manifest]:
    password = ctx.password
    env = [
        {"name": "PGDATA", "value": layout.PGDATA},
        {"name": "POSTGRES_USER", "value": ctx.spec.postgres_superuser},
        _secret_env("POSTGRES_PASSWORD", password.name, password.key),
    ]
    s3 = ctx.spec.backup.s3 if ctx.spec.backup.type == "s3" else None
    if s3 is not None:
        env.append({"name": "AWS_REGION", "value": s3.region})
        if s3.credentials_secret:
            env += [_secret_env(k, s3.credentials_secret, k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    return env


def _mounts(ctx: ShardContext, *extra: Manifest) -> list[Manifest]:
    return [
        {"name": layout.VOL_DATA, "mountPath": layout.POOLER_DIR},
        {"name": layout.VOL_BACKUP, "mountPath": ctx.spec.backup.filesystem.path},
        {"name": layout.VOL_SOCKET, "mountPath": layout.SOCKET_DIR},
        *extra,
        {"name": layout.VOL_CERTS, "mountPath": layout.CERT_DIR, "readOnly": True},
    ]


def _multipooler(ctx: ShardContext, pool: Pool, cell: str, service_id: str) -> Manifest:
    spec, sid = ctx.spec, ctx.sid
    args = [
        "multipooler",
        f"--http-port={layout.MULTIPOOLER_HTTP}",
        f"--grpc-port={layout.MULTIPOOLER_GRPC}",
        f"--pooler-dir={layout.POOLER_DIR}",
        f"--socket-file={layout.POOLER_DIR}/pg_sockets/.s.PGSQL.{layout.POSTGRES}",
        "--service-map=grpc-pooler",
        f"--topo-global-server-addresses={spec.global_topo_server.address}",
        f"--topo-global-root={spec.global_topo_server.root_path}",
        f"--cell={cell}",
        f"--database={sid.database}",
        f"--table-group={sid.tablegroup}",
        f"--shard={sid.shard}",
        f"--service-id={service_id}",
        f"--pgctld-addr=localhost:{layout.PGCTLD_GRPC}",
        f"--pg-port={layout.POSTGRES}",
        f"--connpool-global-capacity={layout.CONNPOOL_GLOBAL_CAPACITY}",
        f"--connpool-admin-capacity={layout.CONNPOOL_ADMIN_CAPACITY}",
        f"--log-level={spec.log_levels.multipooler}",
        f"--pgbackrest-cert-file={layout.CERT_DIR}/pgbackrest.crt",
        f"--pgbackrest-key-file={layout.CERT_DIR}/pgbackrest.key",
        f"--pgbackrest-ca-file={layout.CERT_DIR}/ca.crt",
    ]
    return {
        "name": "multipooler",
        "image": spec.images.multipooler,
        "imagePullPolicy": spec.images.image_pull_policy,
        # A native sidecar: started before, and stopped after, the postgres container.
        "restartPolicy": "Always",
        "args": args,
        "ports": [
            _port("http", layout.MULTIPOOLER_HTTP),
            _port("grpc", layout.MULTIPOOLER_GRPC),
            _port("postgres", layout.POSTGRES),
        ],
        "env": _common_env(ctx),
        "volumeMounts": _mounts(ctx),
        "resources": resources(pool.multipooler.resources),
        "securityContext": container_security(pool.fs_group),
        **probes("/live", "/live", layout.MULTIPOOLER_HTTP),
    }


def _pgctld(ctx: ShardContext, pool: Pool) -> Manifest:
    spec = ctx.spec
    args = [
        "server",
        f"--pooler-dir={layout.POOLER_DIR}",
        f"--grpc-port={layout.PGCTLD_GRPC}",
        f"--pg-port={layout.POSTGRES}",
        "--pg-listen-addresses=*",
        f"--log-level={spec.log_levels.pgctld}",
        f"--grpc-socket-file={layout.POOLER_DIR}/pgctld.sock",
        f"--pg-hba-template={layout.PGCTLD_CONFIG_DIR}/{layout.PG_HBA_KEY}",
        f"--http-port={layout.PGCTLD_HTTP}",
    ]
    env = _common_env(ctx)
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
    args += [f"--pgbackrest-cert-dir={layout.CERT_DIR}", f"--pgbackrest-port={layout.PGBACKREST}"]
    return {
        "name": "postgres",
        "image": spec.images.postgres,
        "imagePullPolicy": spec.images.image_pull_policy,
        "command": ["/usr/local/bin/pgctld"],
        "args": args,
        "ports": [
            _port("pgctld-http", layout.PGCTLD_HTTP),
            _port("pgctld-grpc", layout.PGCTLD_GRPC),
            _port("pgbackrest", layout.PGBACKREST),
        ],
        "env": env,
        "volumeMounts": _mounts(ctx, *mounts),
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
        **probes("/live", "/live", layout.PGCTLD_HTTP),
    }


def _exporter(ctx: ShardContext) -> Manifest:
    password = ctx.password
    return {
        "name": "postgres-exporter",
        "image": ctx.spec.images.postgres_exporter,
        "imagePullPolicy": ctx.spec.images.image_pull_policy,
        "args": [f"--web.listen-address=:{layout.EXPORTER}"],
        "ports": [_port("metrics", layout.EXPORTER)],
        "env": [
            {"name": "DATA_SOURCE_URI", "value": f"localhost:{layout.POSTGRES}/postgres?sslmode=disable"},
            {"name": "DATA_SOURCE_USER", "value": ctx.spec.postgres_superuser},
            _secret_env("DATA_SOURCE_PASS", password.name, password.key),
        ],
        "securityContext": container_security(None),
    }


def _volumes(ctx: ShardContext, cell: str, claim: str) -> list[Manifest]:
    spec = ctx.spec
    backup: Manifest = (
        {"persistentVolumeClaim": {"claimName": ctx.name(naming.backup_pvc_name, cell)}}
        if spec.backup.type == "filesystem" else {"emptyDir": {}}
    )
    volumes = [
        {"name": layout.VOL_DATA, "persistentVolumeClaim": {"claimName": claim}},
        {"name": layout.VOL_BACKUP, **backup},
        {"name": layout.VOL_SOCKET, "emptyDir": {}},
        {"name": layout.VOL_PG_HBA, "configMap": {"name": ctx.name(naming.pg_hba_configmap_name)}},
    ]
    if spec.postgres_config_ref:
        ref = spec.postgres_config_ref
        volumes.append({"name": layout.VOL_PG_CONFIG_TEMPLATE, "configMap": {
            "name": ref.name, "items": [{"key": ref.key, "path": layout.PG_CONFIG_TEMPLATE_FILE}]}})
    if spec.postgres_config:
        volumes.append({"name": layout.VOL_PG_EXTRA_CONFIG,
                        "configMap": {"name": ctx.name(naming.postgres_config_configmap_name)}})
    volumes.append(cert_volume(ctx))
    return volumes


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


def pod_spec(ctx: ShardContext, pool_name: str, cell: str, pod: str, service_id: str, claim: str) -> Manifest:
    pool = ctx.spec.pools[pool_name]
    s3 = ctx.spec.backup.s3 if ctx.spec.backup.type == "s3" else None
    spec: Manifest = {
        "hostname": pod,
        "subdomain": ctx.name(naming.headless_service_name, pool_name, cell),
        "terminationGracePeriodSeconds": layout.TERMINATION_GRACE_SECONDS,
        "enableServiceLinks": False,
        "securityContext": pod_security(pool.fs_group),
        "initContainers": [_multipooler(ctx, pool, cell, service_id)],
        "containers": [_pgctld(ctx, pool), _exporter(ctx)],
        "volumes": _volumes(ctx, cell, claim),
        **scheduling(ctx, cell, pool.node_selector, pool.affinity, pool.tolerations),
    }
    if s3 is not None and s3.service_account_name:
        spec["serviceAccountName"] = s3.service_account_name
    else:
        spec["automountServiceAccountToken"] = False  # pool pods never talk to the Kubernetes API
    return spec


def pool_spec_hash(ctx: ShardContext, pool_name: str, cell: str) -> str:
    template = pod_spec(ctx, pool_name, cell, _PLACEHOLDER_POD, _PLACEHOLDER_SERVICE_ID, _PLACEHOLDER_CLAIM)
    return spechash.spec_hash(template, ctx.postgres_config_hash)


def _indexed_labels(ctx: ShardContext, pool: str, cell: str, index: int) -> dict[str, str]:
    return {**labels.pool_labels(ctx.sid, pool, cell), keys.LABEL_INDEX: str(index)}


def pool_pod(ctx: ShardContext, pool: str, cell: str, index: int, spec_hash: str) -> Manifest:
    name = ctx.name(naming.pod_name, pool, cell, index)
    annotations = {
        keys.ANN_SPEC_HASH: spec_hash,
        keys.ANN_PROJECT_REF: ctx.project_ref,
        keys.ANN_PROMETHEUS_SCRAPE: "true",
        keys.ANN_PROMETHEUS_PORT: str(layout.EXPORTER),
        keys.ANN_PROMETHEUS_PATH: "/metrics",
    }
    if ctx.postgres_config_hash:
        annotations[keys.ANN_POSTGRES_CONFIG_HASH] = ctx.postgres_config_hash
    metadata = ctx.meta(name, _indexed_labels(ctx, pool, cell, index))
    metadata["annotations"] = annotations
    metadata["finalizers"] = [keys.FINALIZER_POD]
    claim = ctx.name(naming.data_pvc_name, pool, cell, index)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(ctx, pool, cell, name, naming.service_id(name), claim),
    }


def pvc_spec(storage: Storage) -> Manifest:
    spec: Manifest = {
        "accessModes": list(storage.access_modes),
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.class_:
        spec["storageClassName"] = storage.class_
    return spec


def data_pvc(ctx: ShardContext, pool: str, cell: str, index: int) -> Manifest:
    """A data PVC without ownerReference: the planner sets it from `whenDeleted`."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.meta(ctx.name(naming.data_pvc_name, pool, cell, index),
                             _indexed_labels(ctx, pool, cell, index), owned=False),
        "spec": pvc_spec(ctx.spec.pools[pool].storage),
    }
