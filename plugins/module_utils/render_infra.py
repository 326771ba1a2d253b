"""Everything around the pool pods: headless Services, PDBs, backup PVCs, MultiOrch, ConfigMaps, TLS."""

from __future__ import annotations

from . import keys, labels, layout, naming, spechash
from .desired import GeneratedTLS
from .render_context import Manifest, ShardContext, postgres_config_text
from .render_pod import (
    container_security,
    pod_security,
    probes,
    pvc_spec,
    resources,
    scheduling,
)

# Our own default; same reach as the Go operator's (in-cluster trust for replication and for the
# poolers), because Multigres wires no replication password in era A. Override with pgHbaTemplate.
DEFAULT_PG_HBA = """\
# pg_hba.conf template rendered by multigres.pools; pgctld replaces {{.User}} with the superuser.
# TYPE  DATABASE     USER       ADDRESS      METHOD
local   all          {{.User}}               trust
local   all          all                     peer
local   replication  all                     trust
# Standbys stream from the primary and pg_rewind from it over the pod network.
host    replication  all        0.0.0.0/0    trust
host    replication  all        ::/0         trust
host    all          all        127.0.0.1/32 scram-sha-256
host    all          all        ::1/128      scram-sha-256
host    all          all        0.0.0.0/0    trust
host    all          all        ::/0         trust
"""


def _svc_port(name: str, port: int) -> Manifest:
    return {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}


def headless_service(ctx: ShardContext, pool: str, cell: str) -> Manifest:
    """DNS for `<pod>.<svc>.<ns>.svc`: the FQDN each multipooler publishes as its hostname."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(naming.headless_service_name(ctx.sid, pool, cell),
                             labels.pool_labels(ctx.sid, pool, cell)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels.pool_selector(ctx.sid, pool, cell),
            "ports": [
                _svc_port("http", layout.MULTIPOOLER_HTTP),
                _svc_port("grpc", layout.MULTIPOOLER_GRPC),
                _svc_port("postgres", layout.POSTGRES),
                _svc_port("metrics", layout.EXPORTER),
            ],
        },
    }


def pod_disruption_budget(ctx: ShardContext, pool: str, cell: str) -> Manifest:
    """minAvailable = replicas - 1: exactly one voluntary disruption when every pod is Ready.

    Not `maxUnavailable: 1` (the Go operator's choice): the disruption controller resolves
    maxUnavailable and percentages through the pods' controller's scale subresource, and bare pods
    owned by a MultigresShard (which has none) then never allow a disruption. An integer
    minAvailable needs no controller.
    """
    replicas = ctx.spec.pools[pool].replicas_per_cell
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.meta(naming.pdb_name(ctx.sid, pool, cell), labels.pool_labels(ctx.sid, pool, cell)),
        "spec": {
            "minAvailable": replicas - 1,
            "selector": {"matchLabels": labels.pool_selector(ctx.sid, pool, cell)},
        },
    }


def backup_pvc(ctx: ShardContext, cell: str) -> Manifest:
    """The cell's shared filesystem backup volume; owned by the shard only when whenDeleted=Delete."""
    owned = ctx.spec.pvc_deletion_policy.when_deleted == "Delete"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.meta(
            naming.backup_pvc_name(ctx.sid, cell),
            {**labels.component_labels(ctx.sid, keys.COMPONENT_BACKUP), keys.LABEL_CELL: cell},
            owned=owned,
        ),
        "spec": pvc_spec(ctx.spec.backup.filesystem.storage),
    }


def _multiorch_selector(ctx: ShardContext, cell: str) -> dict[str, str]:
    return {
        keys.LABEL_APP_COMPONENT: keys.COMPONENT_MULTIORCH,
        keys.LABEL_APP_INSTANCE: ctx.sid.cluster,
        **labels.shard_selector(ctx.sid),
        keys.LABEL_CELL: cell,
    }


def multiorch_deployment(ctx: ShardContext, cell: str) -> Manifest:
    spec, sid = ctx.spec, ctx.sid
    orch = spec.multiorch
    pod_labels = {**labels.component_labels(sid, keys.COMPONENT_MULTIORCH, orch.pod_labels), keys.LABEL_CELL: cell}
    container = {
        "name": "multiorch",
        "image": spec.images.multiorch,
        "imagePullPolicy": spec.images.image_pull_policy,
        "args": [
            "multiorch",
            f"--http-port={layout.MULTIORCH_HTTP}",
            f"--grpc-port={layout.MULTIORCH_GRPC}",
            f"--topo-global-server-addresses={spec.global_topo_server.address}",
            f"--topo-global-root={spec.global_topo_server.root_path}",
            f"--cell={cell}",
            f"--watch-targets={sid.database}/{sid.tablegroup}/{sid.shard}",
            f"--log-level={spec.log_levels.multiorch}",
        ],
        "ports": [
            {"name": "http", "containerPort": layout.MULTIORCH_HTTP, "protocol": "TCP"},
            {"name": "grpc", "containerPort": layout.MULTIORCH_GRPC, "protocol": "TCP"},
        ],
        "resources": resources(orch.resources),
        "securityContext": container_security(None),
        **probes("/ready", "/live", layout.MULTIORCH_HTTP),
    }
    template_spec: Manifest = {
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_security(None),
        "containers": [container],
        **scheduling(ctx, cell, {}, orch.affinity, orch.tolerations),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": ctx.meta(naming.multiorch_deployment_name(sid, cell),
                             {**labels.component_labels(sid, keys.COMPONENT_MULTIORCH), keys.LABEL_CELL: cell}),
        "spec": {
            "replicas": orch.replicas,
            "selector": {"matchLabels": _multiorch_selector(ctx, cell)},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {**orch.pod_annotations, keys.ANN_PROJECT_REF: ctx.project_ref},
                },
                "spec": template_spec,
            },
        },
    }


def multiorch_service(ctx: ShardContext, cell: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(naming.multiorch_service_name(ctx.sid, cell),
                             {**labels.component_labels(ctx.sid, keys.COMPONENT_MULTIORCH), keys.LABEL_CELL: cell}),
        "spec": {
            "type": "ClusterIP",
            "selector": _multiorch_selector(ctx, cell),
            "ports": [_svc_port("http", layout.MULTIORCH_HTTP), _svc_port("grpc", layout.MULTIORCH_GRPC)],
        },
    }


def _configmap(ctx: ShardContext, name: str, data: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.meta(name, labels.component_labels(ctx.sid, keys.COMPONENT_CONFIG)),
        "data": data,
    }


def pg_hba_configmap(ctx: ShardContext) -> Manifest:
    text = ctx.spec.pg_hba_template or DEFAULT_PG_HBA
    return _configmap(ctx, naming.pg_hba_configmap_name(ctx.sid), {layout.PG_HBA_KEY: text})


def postgres_config_configmap(ctx: ShardContext) -> Manifest:
    return _configmap(ctx, naming.postgres_config_configmap_name(ctx.sid),
                      {layout.PG_EXTRA_CONFIG_KEY: postgres_config_text(ctx.spec)})


PGBACKREST_COMMON_NAME = "pgbackrest"


def pgbackrest_dns_names(ctx: ShardContext) -> list[str]:
    """Every pool pod's FQDN, as wildcards under each pool and cell's headless Service."""
    domains = []
    for pool in sorted(ctx.spec.pools):
        for cell in ctx.spec.pools[pool].cells:
            svc = naming.headless_service_name(ctx.sid, pool, cell)
            domains += [f"*.{svc}.{ctx.namespace}.svc", f"*.{svc}.{ctx.namespace}.svc.{layout.CLUSTER_DOMAIN}"]
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


def pgbackrest_certificate(ctx: ShardContext) -> Manifest:
    """A cert-manager Certificate valid for every pool pod's FQDN, for server and client auth."""
    tls = ctx.spec.backup.pgbackrest_tls
    assert tls.issuer_ref is not None  # guaranteed by the model rule tls-cert-manager-needs-issuer
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
