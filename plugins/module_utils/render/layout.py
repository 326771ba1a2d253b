"""Fixed ports, paths and volume names of the pool pods and per-cell Deployments.

Era A (contract §3.9) and v0.1.0 (multigres-v0.1.md §5) share the ports and the pooler directory;
what only v0.1.0 uses is marked so below.
"""

from __future__ import annotations

MULTIPOOLER_HTTP = 15200
MULTIPOOLER_GRPC = 15270
POSTGRES = 5432
PGCTLD_HTTP = 15400
PGCTLD_GRPC = 15470
PGBACKREST = 8432
EXPORTER = 9187
MULTIORCH_HTTP = 15300
# The operator and the agent (install bundle): /healthz, /readyz and /metrics on one port.
INSTALL_HTTP = 8080
MULTIORCH_GRPC = 15370
# v0.1.0: the optional per-cell multigateway (the local provisioner's ports for cell 1). Its
# Service publishes the PostgreSQL protocol on the usual 5432.
MULTIGATEWAY_HTTP = 15100
MULTIGATEWAY_GRPC = 15170
MULTIGATEWAY_PG = 15432

POOLER_DIR = "/var/lib/pooler"
PGDATA = f"{POOLER_DIR}/pg_data"
STANDBY_SIGNAL = "standby.signal"  # in PGDATA: PostgreSQL starts in recovery while it exists
# v0.1.0, in POOLER_DIR: a first backup was interrupted, the data directory is stale (multipooler
# cleans it up and retries; constants.BootstrapSentinelFile).
BOOTSTRAP_SENTINEL = ".multigres-bootstrap-in-progress"
# v0.1.0: the pgpass file pgctld writes and names in PGPASSFILE for PostgreSQL's archive-push.
PGBACKREST_PGPASS = f"{POOLER_DIR}/pgbackrest/pgbackrest.pgpass"
SOCKET_DIR = "/var/run/postgresql"
PGCTLD_CONFIG_DIR = "/etc/pgctld"
PG_HBA_KEY = "pg_hba_template.conf"
# Beside /etc/pgctld, not inside it: that is the read-only pg_hba ConfigMap volume, where no mount
# point can be made (runc and the process kubelet alike fail with EROFS, as these once did).
PG_CONFIG_TEMPLATE_DIR = "/etc/pgctld-postgres"
PG_CONFIG_TEMPLATE_FILE = "postgresql.conf.tmpl"
PG_EXTRA_CONFIG_DIR = "/etc/pgctld-postgres-config"
PG_EXTRA_CONFIG_KEY = "postgresql.conf"
CERT_DIR = "/certs/pgbackrest"
# spec.security.grpcTLS: the user's Secret (tls.crt, tls.key, ca.crt, the kubernetes.io/tls names).
GRPC_TLS_DIR = "/certs/grpc"
GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CA = "tls.crt", "tls.key", "ca.crt"
LOOPBACK = "127.0.0.1"
# multiorch/multigateway pods with grpcTLS: the fsGroup that reads the Secret's 0440 files (the kubelet
# gives mounted files that group and adds it to the container's groups, whatever its user).
CELL_FS_GROUP = 999
# Where pgctld listens for PostgreSQL's Unix socket (pgctld puts it under <pooler-dir>/pg_sockets).
PG_SOCKET_FILE = f"{POOLER_DIR}/pg_sockets/.s.PGSQL.{POSTGRES}"
PGCTLD_GRPC_SOCKET = f"{POOLER_DIR}/pgctld.sock"

# v0.1.0: binaries by absolute path (the images' PATH is not ours to rely on), and the password
# as a file (POSTGRES_PASSWORD_FILE, read by pgctld and multipooler) instead of an env value.
MULTIGRES_BIN_DIR = "/multigres/bin"
PGCTLD_BIN = "/usr/local/bin/pgctld"
EXPORTER_BIN = "/bin/postgres_exporter"  # the entrypoint of the postgres-exporter image
# The postgres-exporter image runs as `USER nobody` (its Dockerfile), a name: a kubelet cannot verify
# runAsNonRoot against a name and refuses the container, so the pod says the uid (busybox's nobody).
EXPORTER_UID = 65534
PASSWORD_DIR = "/etc/postgres-password"
PASSWORD_FILE = "password"

VOL_DATA = "pgdata"
VOL_BACKUP = "backup-data"
VOL_SOCKET = "socket-dir"
VOL_PG_HBA = "pg-hba-template"
VOL_PG_CONFIG_TEMPLATE = "postgres-config-template"
VOL_PG_EXTRA_CONFIG = "postgres-config"
VOL_CERTS = "pgbackrest-certs"
VOL_GRPC_TLS = "grpc-tls"
VOL_PASSWORD = "postgres-password"  # v0.1.0

TERMINATION_GRACE_SECONDS = 30
# v0.1.0: multipooler's graceful shutdown is bounded by --onterm-timeout (30 s) plus
# --onclose-timeout (10 s); pgctld, the sidecar, is stopped only after that, inside the same grace.
TERMINATION_GRACE_SECONDS_V0_1 = 45
# v0.1.0 pgctld --timeout: seconds pg_ctl may wait for PostgreSQL to start or stop (crash recovery).
PGCTLD_TIMEOUT_SECONDS = 60
CONNPOOL_GLOBAL_CAPACITY = 40
CONNPOOL_ADMIN_CAPACITY = 5
CLUSTER_DOMAIN = "cluster.local"
