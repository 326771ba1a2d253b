"""Who may connect to a shard's pods, and how they authenticate: the default pg_hba template and the
shard's NetworkPolicy (docs/api.md, "Security").

What each connection uses on Multigres v0.1.0 (read in its source; shared/reference/multigres-v0.1.md):
every process authenticates as the superuser with the one password of the shard's Secret, which
pgctld and multipooler read from POSTGRES_PASSWORD_FILE.
- pgctld (initdb --pwfile, its own psql, pg_ctl): the pod's Unix socket; it exports PGPASSFILE, so
  PostgreSQL's children (archive-push) and the pgBackRest TLS server inherit the password.
- multipooler: its admin pool and per-user pools over the Unix socket (the user pools with the SCRAM
  keys the gateway forwards); it writes a pgpass file for pgBackRest and for replication.
- a standby: `primary_conninfo` names that pgpass file (`passfile=`), user = the superuser, over TCP
  to the primary's pod address. pg_rewind (through pgctld) connects to the primary's `postgres`
  database over TCP with the same password.
- pgBackRest: locally over the socket; a replica's backup reaches the primary's pgBackRest TLS server
  (port 8432, client certificate CN pgbackrest), which connects to its own socket.
- multigateway: no PostgreSQL connection of its own. It checks a client's SCRAM proof against the
  verifier multipooler reads from pg_authid, then hands the proof's keys to multipooler.
- multiorch and the agent: gRPC only (multipooler's port 15270; the agent also multiorch's), never PostgreSQL.
- postgres-exporter: TCP to 127.0.0.1 with the password.
So v0.1.0 needs no `trust` line: SCRAM-SHA-256 on the socket, on localhost and from the pod network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import keys, labels, naming
from ..core.manifest import Manifest
from . import layout
from .context import ShardContext

if TYPE_CHECKING:  # the model (pydantic) is only a type here: rendering runs on validated specs
    from ..spec.security import LabelSelector, NetworkPeer

# Era A (d782aa06) wires no replication password, so standbys must be trusted; this is the Go
# operator's reach. Override with pgHbaTemplate.
ERA_A_PG_HBA = """\
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

_METHOD = "scram-sha-256"


def _line(kind: str, database: str, user: str, address: str = "") -> str:
    return f"{kind:<7} {database:<12} {user:<10} {address:<18} {_METHOD}\n"


def v0_1_pg_hba(pod_network: list[str]) -> str:
    """SCRAM-SHA-256 for every login: on the pod's socket, from the pod itself, and from `pod_network`
    (replication only as the superuser, which is who standbys connect as)."""
    text = (
        "# pg_hba.conf template rendered by multigres.pools for Multigres v0.1.0; pgctld replaces {{.User}}\n"
        "# with the superuser. Every login needs the password (SCRAM-SHA-256); nothing is trusted.\n"
        "# pgctld, multipooler and pgBackRest: the pod's Unix socket.\n"
        + _line("local", "all", "all")
        + "# postgres-exporter and tools inside the pod.\n"
        + _line("host", "all", "all", "127.0.0.1/32")
        + _line("host", "all", "all", "::1/128")
        + "# Standbys streaming from the primary (primary_conninfo with multipooler's pgpass file).\n"
        + "".join(_line("host", "replication", "{{.User}}", cidr) for cidr in pod_network)
        + "# Clients, the multigateway's users and pg_rewind, over the pod network.\n"
        + "".join(_line("host", "all", "all", cidr) for cidr in pod_network)
    )
    return text


def pg_hba_text(ctx: ShardContext) -> str:
    """The user's template, else the version's default."""
    if ctx.spec.pg_hba_template:
        return ctx.spec.pg_hba_template
    if ctx.version is keys.MultigresVersion.V0_1_0:
        return v0_1_pg_hba(list(ctx.spec.security.pod_network_cidrs))
    return ERA_A_PG_HBA


# --- the NetworkPolicy --------------------------------------------------------------------------
def _selector(selector: LabelSelector) -> Manifest:
    # An empty selector is `{}` (everything); an empty matchLabels would read back as a difference.
    return {"matchLabels": dict(sorted(selector.match_labels.items()))} if selector.match_labels else {}


def peer(p: NetworkPeer) -> Manifest:
    if p.ip_block is not None:
        block: Manifest = {"cidr": p.ip_block.cidr}
        if p.ip_block.except_:
            block["except"] = list(p.ip_block.except_)
        return {"ipBlock": block}
    out: Manifest = {}
    if p.namespace_selector is not None:
        out["namespaceSelector"] = _selector(p.namespace_selector)
    if p.pod_selector is not None:
        out["podSelector"] = _selector(p.pod_selector)
    return out


def _rule(peers: list[Manifest], *ports: int) -> Manifest:
    return {"from": peers, "ports": [{"protocol": "TCP", "port": n} for n in sorted(set(ports))]}


def network_policy(ctx: ShardContext) -> Manifest:
    """Ingress isolation of every pod of the shard (pool pods, multiorch, multigateway), admitting:
    - from the shard's own pods: PostgreSQL (replication, pg_rewind), pgBackRest's TLS server and the
      gRPC ports (multiorch and the gateway dial multipooler);
    - from the agent: multipooler's and multiorch's gRPC;
    - from `clients`: PostgreSQL on the pool pods and on the gateway;
    - from `metrics`: postgres-exporter, when it runs.
    pgctld's ports and the HTTP ports stay closed to other pods (kubelet probes come from the node,
    which NetworkPolicies do not restrict). Egress is not restricted: pods need the topology etcd,
    DNS and the backup repository, which live outside the shard."""
    spec, sid = ctx.spec, ctx.sid
    settings = spec.security.network_policy
    gateway = bool(spec.multigateway_cells())
    shard_pods = {"podSelector": {"matchLabels": labels.shard_selector(sid)}}
    internal = [layout.POSTGRES, layout.PGBACKREST, layout.MULTIPOOLER_GRPC, layout.MULTIORCH_GRPC]
    client_ports = [layout.POSTGRES]
    if gateway:
        internal.append(layout.MULTIGATEWAY_GRPC)
        client_ports.append(layout.MULTIGATEWAY_PG)
    # The agent dials multipooler (drains, roles, backups) and multiorch (a primary's handover).
    ingress = [_rule([shard_pods], *internal),
               _rule([peer(settings.agent)], layout.MULTIPOOLER_GRPC, layout.MULTIORCH_GRPC)]
    if settings.clients:
        ingress.append(_rule([peer(p) for p in settings.clients], *client_ports))
    if spec.monitoring.postgres_exporter.enabled and settings.metrics:
        ingress.append(_rule([peer(p) for p in settings.metrics], layout.EXPORTER))
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.meta(ctx.name(naming.network_policy_name),
                             labels.component_labels(sid, keys.COMPONENT_NETWORK_POLICY)),
        "spec": {
            "podSelector": {"matchLabels": labels.shard_selector(sid)},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
