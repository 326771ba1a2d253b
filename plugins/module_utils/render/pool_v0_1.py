"""Pool pod containers for Multigres v0.1.0 (shared/reference/multigres-v0.1.md §5).

pgctld is the native sidecar (an init container with `restartPolicy: Always`): it starts first and
is stopped only after multipooler, the main container, has exited. So SIGTERM reaches multipooler
first, which makes the pooler INELIGIBLE, lets multiorch take it out of the cohort, and stops
PostgreSQL through a pgctld that is still running. Every container names its binary in `command`
(the images' entrypoints are not ours to rely on), and every flag is spelled out even where it
equals Multigres' default, so the pod says exactly what runs.
"""

from __future__ import annotations

import math
import shlex
from decimal import Decimal
from typing import TYPE_CHECKING

from ..core import keys, naming
from ..core.manifest import Manifest
from ..state import bootstrap
from ..state.desired import BootstrapGuard
from . import grpc_tls as render_grpc_tls
from . import layout
from .context import ShardContext
from .parts import (
    container_security,
    field_env,
    http_probe,
    pgctld_config,
    pool_mounts,
    port,
    postgres_env,
    repository,
    repository_mounts,
    resources,
    s3_env,
)

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.model import Pool

POD_NAME_ENV = "POD_NAME"
# multipooler's HTTP server answers /live before its manager is ready; pgctld's /ready waits for
# PostgreSQL (initdb, a restore or the first backup can take minutes), so only readiness uses it.
# Probed every second while starting: the kubelet starts multipooler only once the pgctld sidecar's
# startup probe passed, and a pod in a rolling update is replaced only once it is Ready, so each
# period is paid up to twice per pod (5 s periods cost ~10 s of a ~16 s start). Local HTTP GETs.
_STARTUP_PERIOD, _STARTUP_FAILURES = 1, 300  # 5 minutes to bring the HTTP endpoints up
_READY_PERIOD, _LIVE_PERIOD = 2, 10


def _password_env() -> Manifest:
    return {"name": "POSTGRES_PASSWORD_FILE", "value": f"{layout.PASSWORD_DIR}/{layout.PASSWORD_FILE}"}


def _password_mount() -> Manifest:
    return {"name": layout.VOL_PASSWORD, "mountPath": layout.PASSWORD_DIR, "readOnly": True}


def password_volume(ctx: ShardContext) -> Manifest:
    """The superuser password Secret as the one file POSTGRES_PASSWORD_FILE names (mode 0440: the
    fsGroup reads it, nobody else in the pod needs to)."""
    return {"name": layout.VOL_PASSWORD, "secret": {
        "secretName": ctx.password.name, "defaultMode": 0o440,
        "items": [{"key": ctx.password.key, "path": layout.PASSWORD_FILE}]}}


def _probes(ready: str, live: str, port_number: int) -> Manifest:
    return {
        "startupProbe": http_probe(live, port_number, _STARTUP_PERIOD, _STARTUP_FAILURES),
        "livenessProbe": http_probe(live, port_number, _LIVE_PERIOD),
        "readinessProbe": http_probe(ready, port_number, _READY_PERIOD),
    }


def pooler_hostname(ctx: ShardContext, pool_name: str, cell: str) -> str:
    """The `--hostname` multipooler registers: the pod's FQDN under its headless Service, with the
    pod name left to the kubelet (`$(POD_NAME)`), so one pod template serves every index."""
    svc = ctx.name(naming.headless_service_name, pool_name, cell)
    return naming.pooler_fqdn(f"$({POD_NAME_ENV})", svc, ctx.namespace, layout.CLUSTER_DOMAIN)


def _multipooler(ctx: ShardContext, pool: Pool, pool_name: str, cell: str, service_id: str) -> Manifest:
    spec, sid = ctx.spec, ctx.sid
    args = [
        f"--cell={cell}",
        f"--database={sid.database}",
        f"--table-group={sid.tablegroup}",
        f"--shard={sid.shard}",
        f"--service-id={service_id}",
        f"--hostname={pooler_hostname(ctx, pool_name, cell)}",
        f"--topo-global-server-addresses={spec.global_topo_server.address}",
        f"--topo-global-root={spec.global_topo_server.root_path}",
        f"--http-port={layout.MULTIPOOLER_HTTP}",
        f"--grpc-port={layout.MULTIPOOLER_GRPC}",
        f"--pooler-dir={layout.POOLER_DIR}",
        f"--pg-port={layout.POSTGRES}",
        f"--socket-file={layout.PG_SOCKET_FILE}",
        # Explicit: the default (localhost:15200) is multipooler's own HTTP port.
        f"--pgctld-addr=localhost:{layout.PGCTLD_GRPC}",
        f"--pgbackrest-port={layout.PGBACKREST}",
        f"--pgbackrest-cert-file={layout.CERT_DIR}/pgbackrest.crt",
        f"--pgbackrest-key-file={layout.CERT_DIR}/pgbackrest.key",
        f"--pgbackrest-ca-file={layout.CERT_DIR}/ca.crt",
        f"--connpool-global-capacity={layout.CONNPOOL_GLOBAL_CAPACITY}",
        f"--connpool-admin-capacity={layout.CONNPOOL_ADMIN_CAPACITY}",
        # NOT_SERVING waits this long for transactions in flight before the pooler turns INELIGIBLE:
        # a primary's replacement cannot start before it ends (docs/agent.md, "Primary handover").
        f"--connpool-drain-grace-period={pool.multipooler.connection_drain_grace_period}",
        f"--log-level={spec.log_levels.multipooler}",
        *render_grpc_tls.server_args(ctx),
    ]
    return {
        "name": "multipooler",
        "image": ctx.images.multipooler,
        "imagePullPolicy": spec.images.image_pull_policy,
        "command": [f"{layout.MULTIGRES_BIN_DIR}/multipooler"],
        "args": args,
        "ports": [port("http", layout.MULTIPOOLER_HTTP), port("grpc", layout.MULTIPOOLER_GRPC)],
        "env": [field_env(POD_NAME_ENV, "metadata.name"), *postgres_env(ctx, _password_env())],
        "volumeMounts": [*pool_mounts(ctx), _password_mount(), *render_grpc_tls.mounts(ctx)],
        "resources": resources(pool.multipooler.resources),
        "securityContext": container_security(pool.fs_group),
        **_probes("/ready", "/live", layout.MULTIPOOLER_HTTP),
    }


# What `pgctld server` and `pgctld start` both read to find and run PostgreSQL.
_PG_FLAGS = (f"--pooler-dir={layout.POOLER_DIR}", f"--pg-port={layout.POSTGRES}", "--pg-listen-addresses=*",
             f"--timeout={layout.PGCTLD_TIMEOUT_SECONDS}")
# multipooler starts an initialised, stopped PostgreSQL only on its monitor's first pass, 5 s after it
# starts (a constant in v0.1.0), and the pod is not Ready before PostgreSQL is: 5 of a restarted pod's
# ~12 s on a real kubelet. So the sidecar starts it at once, exactly as that pass would (`pgctld
# start`, the same flags and pgctld's PGPASSFILE), in the background so pgctld's endpoints come up
# meanwhile, and only where that pass would start it: PG_VERSION there (an empty volume is left to
# initdb or the restore) and no interrupted first backup (multipooler discards that directory).
# The start check has already run, so a data directory that ran before comes up in recovery. If the
# start fails, the monitor retries as before; multipooler then finds PostgreSQL running and only reads
# its role. The binary is the script's $0 (the container's command names it once).
EARLY_START_SCRIPT = (
    f'if test -f "{layout.PGDATA}/PG_VERSION" && test ! -e "{layout.POOLER_DIR}/{layout.BOOTSTRAP_SENTINEL}"; '
    f'then PGPASSFILE={layout.PGBACKREST_PGPASS} "$0" {shlex.join(["start", *_PG_FLAGS])} & fi; '
    'exec "$0" "$@"')


def _pgctld(ctx: ShardContext, pool: Pool) -> Manifest:
    spec = ctx.spec
    extra_args, extra_env, mounts = pgctld_config(ctx)
    args = [
        "server",
        *_PG_FLAGS,
        f"--http-port={layout.PGCTLD_HTTP}",
        f"--grpc-port={layout.PGCTLD_GRPC}",
        f"--grpc-socket-file={layout.PGCTLD_GRPC_SOCKET}",
        *render_grpc_tls.pgctld_args(ctx),
        f"--pg-hba-template={layout.PGCTLD_CONFIG_DIR}/{layout.PG_HBA_KEY}",
        *extra_args,
        # Both set: pgctld runs the pgBackRest TLS server only with a port and a cert dir.
        f"--pgbackrest-port={layout.PGBACKREST}",
        f"--pgbackrest-cert-dir={layout.CERT_DIR}",
        f"--log-level={spec.log_levels.pgctld}",
    ]
    return {
        "name": "postgres",
        "image": ctx.images.postgres,
        "imagePullPolicy": spec.images.image_pull_policy,
        # A native sidecar: started before, and stopped after, multipooler.
        "restartPolicy": "Always",
        # `sh -c SCRIPT pgctld ARGS...`: the script starts PostgreSQL, then execs pgctld with ARGS.
        "command": ["/bin/sh", "-c", EARLY_START_SCRIPT, layout.PGCTLD_BIN],
        "args": args,
        "ports": [
            port("pgctld-http", layout.PGCTLD_HTTP),
            port("pgctld-grpc", layout.PGCTLD_GRPC),
            port("postgres", layout.POSTGRES),
            port("pgbackrest", layout.PGBACKREST),
        ],
        "env": postgres_env(ctx, _password_env()) + extra_env,
        "volumeMounts": [*pool_mounts(ctx, *mounts), _password_mount()],
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
        # /ready: PostgreSQL accepts on its socket and pgctld's gRPC is up; the pod is Ready then.
        **_probes("/ready", "/live", layout.PGCTLD_HTTP),
    }


# A data directory that ran before starts in recovery: PostgreSQL runs as it last ran, and v0.1.0 has
# two ways to bring an old primary back writable beside the new one (issue #24, docs/agent.md "Primary
# handover"): its pod recreated on the same volume after another pooler was promoted (10-23 s seen,
# sometimes never demoted), and multipooler's own monitor, which restarts a PostgreSQL it finds
# stopped: it can tick between the graceful stop and the process exit and start the old primary
# again, writable, until pgctld stops; the WAL it writes then keeps it from following the new
# timeline. So the signal is written before SIGTERM (multipooler's preStop) and again before
# PostgreSQL starts (the start check, for a pod that was not stopped gracefully). As a standby it
# is writable nowhere: multiorch points it at the leader, or elects one when every pooler comes
# back at once. A new volume (no PG_VERSION) is left to initdb or the restore. Every v0.1.0 shard has
# another pooler to elect: the spec refuses fewer than two (rule v0-1-durability-needs-a-standby).
_MARK_STANDBY = f'test -e "$PGDATA/{layout.STANDBY_SIGNAL}" || : > "$PGDATA/{layout.STANDBY_SIGNAL}"'
_MARK_STANDBY_IF_RAN = f'test -f "$PGDATA/PG_VERSION" && {{ {_MARK_STANDBY}; }}'

# v0.1.0's pgctld writes postgresql.conf (in PGDATA) once, at initdb, with `postgresConfig` appended,
# and never again; a restore copies the primary's. So a `postgresConfig` set or edited later would roll
# the pods and change nothing. The start check makes an initialised postgresql.conf end by including
# the mounted overrides, so every PostgreSQL start reads the shard's current `postgresConfig`, after
# what initdb wrote (`include_if_exists`: no file is mounted while it is unset). Added once.
INCLUDE_OVERRIDES_LINE = f"include_if_exists = '{layout.PG_EXTRA_CONFIG_DIR}/{layout.PG_EXTRA_CONFIG_KEY}'"
_INCLUDE_OVERRIDES = (f'conf="$PGDATA/postgresql.conf"; test ! -f "$conf" || grep -qxF "{INCLUDE_OVERRIDES_LINE}" '
                      f'"$conf" || printf "\\n%s\\n" "{INCLUDE_OVERRIDES_LINE}" >> "$conf"')
_ON_A_DATA_DIRECTORY_THAT_RAN = f"{_MARK_STANDBY}; {_INCLUDE_OVERRIDES}"


def pre_stop_script(delay_s: Decimal) -> str:
    """multipooler's preStop: the standby signal, then the pool's preStopDelay (the pod serves on while
    every DNS cache forgets its address; spec/model.py MultiPoolerSettings.pre_stop_delay says why).
    It always exits 0: a new volume has no signal to write, and a failed hook would only be an event."""
    steps = [_MARK_STANDBY_IF_RAN, *([f"sleep {delay_s.normalize():f}"] if delay_s else []), "exit 0"]
    return "; ".join(steps)


def termination_grace_seconds(pool: Pool) -> int:
    """The pod's grace: multipooler's and pgctld's stop after the preStop hook's delay."""
    return layout.TERMINATION_GRACE_SECONDS_V0_1 + math.ceil(pool.multipooler.pre_stop_delay_seconds)


def bootstrap_guard(ctx: ShardContext) -> BootstrapGuard | None:
    """The bootstrap guard of a v0.1.0 shard (state/bootstrap.py), None for another version."""
    return _guard(ctx) if ctx.version is keys.MultigresVersion.V0_1_0 else None


def _guard(ctx: ShardContext) -> BootstrapGuard:
    """The bootstrap guard with the shard's repository as v0.1.0 names it."""
    repo = repository(ctx)
    # A clone starts from the copied backups only: never initdb, whatever `auto` would resolve to.
    mode = keys.Bootstrap.RECOVERY if ctx.spec.backup.clone_from else ctx.spec.backup.bootstrap
    return BootstrapGuard(mode=mode, repository=repo,
                          backup_pvc=None if repo.s3 else ctx.name(naming.shard_backup_pvc_name))


def _start_check(ctx: ShardContext, pool: Pool, guard: BootstrapGuard) -> Manifest:
    """The one init container before PostgreSQL, both cases in one so the kubelet starts one process
    (each init container costs a pod start a PLEG listing, up to 1 s on a real node): on a data
    directory that ran before, it writes the standby signal and includes the overrides (above); on an
    empty one, a pod whose ANN_BOOTSTRAP is not initdb starts only when the repository (a filesystem
    one mounted read-only; S3 with the pods' own credentials) lists a backup to restore, and nothing
    is written."""
    return {
        "name": keys.REPOSITORY_CHECK_CONTAINER,
        "image": ctx.images.postgres,
        "imagePullPolicy": ctx.spec.images.image_pull_policy,
        "command": ["/bin/sh", "-c", bootstrap.check_script(guard, initialised=_ON_A_DATA_DIRECTORY_THAT_RAN)],
        "env": [{"name": "PGDATA", "value": layout.PGDATA},
                field_env(bootstrap.ENV_BOOTSTRAP, f"metadata.annotations['{keys.ANN_BOOTSTRAP}']"),
                *s3_env(ctx)],
        "volumeMounts": [{"name": layout.VOL_DATA, "mountPath": layout.POOLER_DIR},
                         *repository_mounts(guard.repository)],
        "resources": resources(pool.postgres.resources),
        "securityContext": container_security(pool.fs_group),
    }


def pool_containers(ctx: ShardContext, pool_name: str, cell: str,
                    service_id: str) -> tuple[list[Manifest], list[Manifest]]:
    """(initContainers, containers) of a v0.1.0 pool pod, without the optional exporter."""
    pool = ctx.spec.pools[pool_name]
    pooler = _multipooler(ctx, pool, pool_name, cell, service_id)
    script = pre_stop_script(pool.multipooler.pre_stop_delay_seconds)
    pooler["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", script]}}}
    return [_start_check(ctx, pool, _guard(ctx)), _pgctld(ctx, pool)], [pooler]
