"""Fixed ports, paths and volume names of the era-A pod layout (contract §3.9)."""

from __future__ import annotations

MULTIPOOLER_HTTP = 15200
MULTIPOOLER_GRPC = 15270
POSTGRES = 5432
PGCTLD_HTTP = 15400
PGCTLD_GRPC = 15470
PGBACKREST = 8432
EXPORTER = 9187
MULTIORCH_HTTP = 15300
MULTIORCH_GRPC = 15370

POOLER_DIR = "/var/lib/pooler"
PGDATA = f"{POOLER_DIR}/pg_data"
SOCKET_DIR = "/var/run/postgresql"
PGCTLD_CONFIG_DIR = "/etc/pgctld"
PG_HBA_KEY = "pg_hba_template.conf"
PG_CONFIG_TEMPLATE_DIR = f"{PGCTLD_CONFIG_DIR}/postgres"
PG_CONFIG_TEMPLATE_FILE = "postgresql.conf.tmpl"
PG_EXTRA_CONFIG_DIR = f"{PGCTLD_CONFIG_DIR}/postgres-config"
PG_EXTRA_CONFIG_KEY = "postgresql.conf"
CERT_DIR = "/certs/pgbackrest"

VOL_DATA = "pgdata"
VOL_BACKUP = "backup-data"
VOL_SOCKET = "socket-dir"
VOL_PG_HBA = "pg-hba-template"
VOL_PG_CONFIG_TEMPLATE = "postgres-config-template"
VOL_PG_EXTRA_CONFIG = "postgres-config"
VOL_CERTS = "pgbackrest-certs"

TERMINATION_GRACE_SECONDS = 30
CONNPOOL_GLOBAL_CAPACITY = 40
CONNPOOL_ADMIN_CAPACITY = 5
CLUSTER_DOMAIN = "cluster.local"
