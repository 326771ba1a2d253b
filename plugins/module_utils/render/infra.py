"""Everything around the pool pods: headless Services, PDBs, backup PVCs, ConfigMaps, TLS.
(The per-cell Deployments, multiorch and multigateway, are in render/cell.py.)"""

from __future__ import annotations

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from ..state.desired import CloneSource, GeneratedPassword, GeneratedTLS, PVCPolicy, backup_pvc_policy
from . import layout, spechash
from .context import ShardContext, postgres_config_text
from .parts import pvc_spec, svc_port
from .security import pg_hba_text


def headless_service(ctx: ShardContext, pool: str, cell: str) -> Manifest:
    """DNS for `<pod>.<svc>.<ns>.svc`: the FQDN each multipooler publishes as its hostname, for the
    pods that still carry keys.LABEL_DNS (a finished drain takes it off; plan/infra.py holds the
    selector of a Service created before that label while a serving pod lacks it)."""
    ports = [
        svc_port("http", layout.MULTIPOOLER_HTTP),
        svc_port("grpc", layout.MULTIPOOLER_GRPC),
        svc_port("postgres", layout.POSTGRES),
    ]
    if ctx.version is keys.MultigresVersion.V0_1_0:
        # Documentation only (DNS is what matters): replicas reach the primary's pgBackRest server here.
        ports.append(svc_port("pgbackrest", layout.PGBACKREST))
    if ctx.spec.monitoring.postgres_exporter.enabled:
        ports.append(svc_port("metrics", layout.EXPORTER))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(naming.headless_service_name(ctx.sid, pool, cell),
                             labels.pool_labels(ctx.sid, pool, cell)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels.dns_selector(ctx.sid, pool, cell),
            "ports": ports,
        },
    }


def pod_disruption_budget(ctx: ShardContext, pool: str, cell: str) -> Manifest:
    """minAvailable = replicas: no eviction of a pool pod is ever allowed. Pool pods leave only
    through our drain (out of the synchronous set first, the primary last): on a cordoned node the
    planner drains them (plan/maintenance.py) and `kubectl drain`, which retries refused evictions,
    sees them go. An eviction would delete a pod with no drain at all, the primary included.

    An integer minAvailable, not `maxUnavailable: 0`: the disruption controller resolves
    maxUnavailable and percentages through the pods' controller's scale subresource, and a
    MultigresShard has none (the PDB then fails to sync).
    """
    replicas = ctx.spec.pools[pool].replicas_per_cell
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.meta(naming.pdb_name(ctx.sid, pool, cell), labels.pool_labels(ctx.sid, pool, cell)),
        "spec": {
            "minAvailable": replicas,
            "selector": {"matchLabels": labels.pool_selector(ctx.sid, pool, cell)},
        },
    }


def _backup_pvc(ctx: ShardContext, name: str, pvc_labels: dict[str, str]) -> Manifest:
    policy = backup_pvc_policy(PVCPolicy(ctx.spec.pvc_policy(pool).when_deleted) for pool in ctx.spec.pools)
    owned = policy is PVCPolicy.DELETE
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.meta(name, pvc_labels, owned=owned),
        "spec": pvc_spec(ctx.spec.backup.filesystem.storage),
    }


def backup_pvcs(ctx: ShardContext) -> list[Manifest]:
    """The shared filesystem backup volume(s); owned by the shard (so deleted with it) only when
    backup_pvc_policy says Delete.

    v0.1.0: one for the shard, because the Database record names one backup_location for every
    pooler (a replica in another cell restores from the backups the primary took). Era A: one per
    cell, as the Go operator renders it."""
    base = labels.component_labels(ctx.sid, keys.COMPONENT_BACKUP)
    if ctx.version is keys.MultigresVersion.V0_1_0:
        return [_backup_pvc(ctx, naming.shard_backup_pvc_name(ctx.sid), base)]
    return [_backup_pvc(ctx, naming.backup_pvc_name(ctx.sid, cell), {**base, keys.LABEL_CELL: cell})
            for cell in ctx.spec.pool_cells()]


def _configmap(ctx: ShardContext, name: str, data: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.meta(name, labels.component_labels(ctx.sid, keys.COMPONENT_CONFIG)),
        "data": data,
    }


def pg_hba_configmap(ctx: ShardContext) -> Manifest:
    """pgctld renders it into PGDATA at initdb only (replicas restore it with the data): a change
    reaches new data directories, not running ones (docs/api.md, "Security")."""
    return _configmap(ctx, naming.pg_hba_configmap_name(ctx.sid), {layout.PG_HBA_KEY: pg_hba_text(ctx)})


def postgres_config_configmap(ctx: ShardContext) -> Manifest:
    return _configmap(ctx, naming.postgres_config_configmap_name(ctx.sid),
                      {layout.PG_EXTRA_CONFIG_KEY: postgres_config_text(ctx.spec)})


PGBACKREST_COMMON_NAME = "pgbackrest"


def pgbackrest_dns_names(ctx: ShardContext) -> list[str]:
    """Every pool pod's FQDN, as wildcards under each pool and cell's headless Service: the names
    v0.1.0 multipoolers register as `--hostname`, where replicas reach the primary's pgBackRest."""
    domains = []
    for pool in sorted(ctx.spec.pools):
        for cell in ctx.spec.pools[pool].cells:
            svc = naming.headless_service_name(ctx.sid, pool, cell)
            domains += [f"*.{svc}.{ctx.namespace}.svc",
                        naming.pooler_fqdn("*", svc, ctx.namespace, layout.CLUSTER_DOMAIN)]
    return domains


def generated_pgbackrest_tls(ctx: ShardContext) -> GeneratedTLS:
    """`mode: auto`: the engine creates a CA and a certificate for the same names cert-manager would get."""
    dns_names = tuple(pgbackrest_dns_names(ctx))
    fingerprint = spechash.digest({"cn": PGBACKREST_COMMON_NAME, "dns": list(dns_names)})
    return GeneratedTLS(
        ca_secret=ctx.name(naming.pgbackrest_ca_secret_name),
        tls_secret=ctx.name(naming.pgbackrest_tls_secret_name),
        common_name=PGBACKREST_COMMON_NAME,
        dns_names=dns_names,
        fingerprint=fingerprint,
        labels=tuple(sorted(labels.component_labels(ctx.sid, keys.COMPONENT_BACKUP).items())),
    )


def generated_password(ctx: ShardContext, clone_source: CloneSource | None = None) -> GeneratedPassword | None:
    """No `postgresPasswordSecretRef`: the engine makes the Secret the pods already name; a clone's holds
    the source's password (v0.1.0 restores the source's users with it)."""
    if ctx.spec.postgres_password_secret_ref is not None:
        return None
    return GeneratedPassword(secret=ctx.password.name, key=ctx.password.key,
                             labels=tuple(sorted(labels.component_labels(ctx.sid, keys.COMPONENT_POOL).items())),
                             copy_from=clone_source.password if clone_source else None)


def pgbackrest_certificate(ctx: ShardContext) -> Manifest:
    """A cert-manager Certificate valid for every pool pod's FQDN, for server and client auth."""
    tls = ctx.spec.backup.pgbackrest_tls
    if tls.issuer_ref is None:  # guaranteed by the model rule tls-cert-manager-needs-issuer
        raise AssertionError("backup.pgbackrestTLS: cert-manager without an issuerRef passed the model")
    domains = pgbackrest_dns_names(ctx)
    secret = naming.pgbackrest_tls_secret_name(ctx.sid)
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": ctx.meta(secret, labels.component_labels(ctx.sid, keys.COMPONENT_BACKUP)),
        "spec": {
            "secretName": secret,
            "commonName": PGBACKREST_COMMON_NAME,
            "dnsNames": domains,
            "usages": ["server auth", "client auth"],
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
            "issuerRef": tls.issuer_ref.model_dump(mode="json", by_alias=True),
        },
    }
