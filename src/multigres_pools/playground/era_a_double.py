"""A gRPC test peer that behaves like an era-A multipooler (multigres d782aa06) for the agent's calls.

It follows shared/reference/multigres-contract.md §1.3 (it is a test double for a process that cannot
run here, so it must keep that behaviour, error cases included) and can register itself in a real
etcd exactly as the real pooler does (§2.2-§2.5: binary MultiPooler at the pooler key).

Usage:

    peer = MultipoolerPeer(cell="zone1", service_id="p-1234abcd", hostname="pod-0.svc",
                           database="postgres", table_group="default", shard="0-inf").start()
    peer.set_role("PRIMARY"); peer.set_sync_standbys([("zone1", "p-aaaa"), ("zone1", "p-bbbb")])
    peer.register("http://127.0.0.1:2379", "/multigres/global")   # write the etcd record
    peer.sync_standbys()          # -> [("zone1", "p-aaaa"), ...]
    peer.inject_unavailable(True) # every RPC now fails with UNAVAILABLE
    peer.stop()

The peer listens on 127.0.0.1 with a random port (`peer.port`); the record it publishes carries
`hostname` (so a test can make it match a pod, e.g. "<pod>.<headless>.<ns>.svc.cluster.local") and
port_map["grpc"] = that port. Clients must therefore dial 127.0.0.1 for such names, e.g.
`EraA(dial_host=lambda hostname: "127.0.0.1")` (what cluster DNS does for real pods).
"""

from __future__ import annotations

import threading
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from ansible_collections.multigres.pools.plugins.module_utils.core import naming
from google.protobuf.message import Message

from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.proto.gen import clustermetadata_pb2 as cm
from multigres_pools.proto.gen import multipoolermanagerdata_pb2 as mpd
from multigres_pools.proto.gen import multipoolermanagerservice_pb2_grpc as mps

_TYPES = {"PRIMARY": cm.PRIMARY, "REPLICA": cm.REPLICA, "DRAINED": cm.DRAINED, "UNKNOWN": cm.UNKNOWN}
_BACKUP_TYPES = {"full": "full", "differential": "diff", "incremental": "incr"}
STANDBY_MODE = "operation not allowed: the PostgreSQL instance is in standby mode"
EMPTY_RESULT = "resulting standby list cannot be empty after operation"
NOT_CONFIGURED = "synchronous replication is not configured"
STARTING = "manager is still starting up"


@dataclass
class PeerBackup:
    backup_id: str
    type: str = "full"
    complete: bool = True
    job_id: str = ""


@dataclass
class _State:
    role: str = "REPLICA"
    manager_ready: bool = True
    unavailable: bool = False
    sync_method: mpd.SynchronousMethod = mpd.SYNCHRONOUS_METHOD_FIRST
    num_sync: int = 1
    sync_standbys: list[tuple[str, str]] = field(default_factory=list)
    connected: list[tuple[str, str]] = field(default_factory=list)
    backups: list[PeerBackup] = field(default_factory=list)
    calls: list[tuple[str, object]] = field(default_factory=list)
    reloads: int = 0


def _ids(pairs: list[tuple[str, str]]) -> list[cm.ID]:
    return [cm.ID(component=cm.ID.MULTIPOOLER, cell=c, name=n) for c, n in pairs]


class _Servicer(mps.MultiPoolerManagerServicer):
    def __init__(self, peer: MultipoolerPeer) -> None:
        self.peer = peer

    def _enter(self, method: str, request: Message, context: grpc.ServicerContext, *,
               needs_ready: bool = True) -> _State:
        st = self.peer._state
        st.calls.append((method, request))
        if st.unavailable:
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected: connection refused")
        if needs_ready and not st.manager_ready:
            context.abort(grpc.StatusCode.UNAVAILABLE, STARTING)
        return st

    def State(self, request: mpd.StateRequest, context: grpc.ServicerContext) -> mpd.StateResponse:
        st = self._enter("State", request, context, needs_ready=False)
        return mpd.StateResponse(state="ready" if st.manager_ready else "starting")

    def _primary_status(self, st: _State) -> mpd.PrimaryStatus:
        names = [f"{c}_{n}" for c, n in st.sync_standbys]
        cfg = mpd.SynchronousReplicationConfiguration(
            synchronous_commit=mpd.SYNCHRONOUS_COMMIT_ON if st.sync_standbys else mpd.SYNCHRONOUS_COMMIT_LOCAL,
            synchronous_method=st.sync_method if st.sync_standbys else mpd.SYNCHRONOUS_METHOD_UNSPECIFIED,
            num_sync=st.num_sync if st.sync_standbys else 0,
            standby_ids=_ids(st.sync_standbys),
            standby_application_names=names,
        )
        return mpd.PrimaryStatus(lsn="0/3000060", ready=True, connected_followers=_ids(st.connected),
                                 sync_replication_config=cfg)

    def Status(self, request: mpd.StatusRequest, context: grpc.ServicerContext) -> mpd.StatusResponse:
        with self.peer._lock:
            st = self._enter("Status", request, context)
            primary = st.role == "PRIMARY"
            status = mpd.Status(
                pooler_type=_TYPES[st.role], is_initialized=True, has_data_directory=True,
                postgres_running=True, postgres_ready=True,
                postgres_role="primary" if primary else "standby", wal_position="0/3000060",
                shard_id=self.peer.shard,
            )
            if primary:
                status.primary_status.CopyFrom(self._primary_status(st))
            return mpd.StatusResponse(status=status)

    def PrimaryStatus(self, request: mpd.PrimaryStatusRequest,
                      context: grpc.ServicerContext) -> mpd.PrimaryStatusResponse:
        with self.peer._lock:
            st = self._enter("PrimaryStatus", request, context)
            if st.role != "PRIMARY":
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, STANDBY_MODE)
            return mpd.PrimaryStatusResponse(status=self._primary_status(st))

    def GetFollowers(self, request: mpd.GetFollowersRequest, context: grpc.ServicerContext) -> mpd.GetFollowersResponse:
        with self.peer._lock:
            st = self._enter("GetFollowers", request, context)
            if st.role != "PRIMARY":
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, STANDBY_MODE)
            followers = [
                mpd.FollowerInfo(follower_id=i, application_name=f"{i.cell}_{i.name}", is_connected=True)
                for i in _ids(st.connected)
            ]
            return mpd.GetFollowersResponse(followers=followers,
                                            sync_config=self._primary_status(st).sync_replication_config)

    def UpdateSynchronousStandbyList(self, request: mpd.UpdateSynchronousStandbyListRequest,
                                     context: grpc.ServicerContext) -> mpd.UpdateSynchronousStandbyListResponse:
        # Order of checks as in MG-A rpc_manager.go: ready, arguments, lock, recovery, configured, result.
        with self.peer._lock:
            st = self._enter("UpdateSynchronousStandbyList", request, context)
            op = request.operation
            if op == mpd.STANDBY_UPDATE_OPERATION_UNSPECIFIED:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "operation must be specified")
            if not request.standby_ids:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "standby_ids cannot be empty")
            if st.role != "PRIMARY":
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, STANDBY_MODE)
            if not st.sync_standbys:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, NOT_CONFIGURED)
            given = [(i.cell, i.name) for i in request.standby_ids]
            if op == mpd.STANDBY_UPDATE_OPERATION_ADD:
                result = st.sync_standbys + [g for g in given if g not in st.sync_standbys]
            elif op == mpd.STANDBY_UPDATE_OPERATION_REMOVE:
                result = [s for s in st.sync_standbys if s not in given]
            elif op == mpd.STANDBY_UPDATE_OPERATION_REPLACE:
                result = list(dict.fromkeys(given))
            else:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown operation {op}")
            if not result:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, EMPTY_RESULT)
            if result == st.sync_standbys:
                return mpd.UpdateSynchronousStandbyListResponse()
            st.sync_standbys = result
            if request.reload_config:
                st.reloads += 1
            return mpd.UpdateSynchronousStandbyListResponse()

    def GetBackups(self, request: mpd.GetBackupsRequest, context: grpc.ServicerContext) -> mpd.GetBackupsResponse:
        with self.peer._lock:
            st = self._enter("GetBackups", request, context)
            # pgbackrest info order is oldest first; limit keeps the FIRST n (contract §1.3).
            chosen = st.backups[: request.limit] if request.limit > 0 else list(st.backups)
            return mpd.GetBackupsResponse(backups=[
                mpd.BackupMetadata(
                    table_group=self.peer.table_group, shard=self.peer.shard, backup_id=b.backup_id,
                    status=mpd.BackupMetadata.COMPLETE if b.complete else mpd.BackupMetadata.INCOMPLETE,
                    type=b.type, job_id=b.job_id, multipooler_id=self.peer.service_id,
                ) for b in chosen
            ])

    def Backup(self, request: mpd.BackupRequest, context: grpc.ServicerContext) -> mpd.BackupResponse:
        with self.peer._lock:
            st = self._enter("Backup", request, context)
            if st.role == "PRIMARY" and not request.force_primary:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                              "backups from primary databases are not allowed unless force_primary is set")
            if request.type not in _BACKUP_TYPES:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid backup type {request.type!r}")
            short = _BACKUP_TYPES[request.type]
            stamp = (request.job_id or "20260101-000000").split(".")[0]
            suffix = {"full": "F", "diff": "D", "incr": "I"}[short]
            backup_id = f"{stamp}{suffix}"
            st.backups.append(PeerBackup(backup_id, short, True, request.job_id))
            return mpd.BackupResponse(backup_id=backup_id)


class MultipoolerPeer:
    """One fake multipooler. Thread-safe; all setters may be called while the agent is talking to it."""

    def __init__(self, *, cell: str = "zone1", service_id: str = "p-00000000", hostname: str = "127.0.0.1",
                 database: str = "postgres", table_group: str = "default", shard: str = "0-inf",
                 role: str = "REPLICA") -> None:
        self.cell, self.service_id, self.hostname = cell, service_id, hostname
        self.database, self.table_group, self.shard = database, table_group, shard
        self._lock = threading.RLock()
        self._state = _State(role=role)
        self._server: grpc.Server | None = None
        self.port = 0

    # --- lifecycle -----------------------------------------------------------------------------------
    def start(self, tls: tuple[Path, Path, Path | None] | None = None, address: str = "127.0.0.1",
              port: int = 0) -> MultipoolerPeer:
        """Serve on a loopback `address` and `port` (0: a free one); `tls` = (certificate, key, client CA
        or None) serves TLS the way multipooler's --grpc-cert/--grpc-key/--grpc-ca do (a client CA:
        client certificates required). Another 127.x address and the same port: a pod's successor."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        mps.add_MultiPoolerManagerServicer_to_server(_Servicer(self), server)
        if tls is None:
            self.port = server.add_insecure_port(f"{address}:{port}")
        else:
            cert, key, client_ca = tls
            credentials = grpc.ssl_server_credentials(
                [(key.read_bytes(), cert.read_bytes())], client_ca.read_bytes() if client_ca else None,
                require_client_auth=client_ca is not None)
            self.port = server.add_secure_port(f"{address}:{port}", credentials)
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None

    def __enter__(self) -> MultipoolerPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- behaviour knobs -----------------------------------------------------------------------------
    def set_role(self, role: str) -> None:
        """PRIMARY (not in recovery), REPLICA or DRAINED (in recovery)."""
        if role not in _TYPES:
            raise ValueError(f"unknown role {role}")
        with self._lock:
            self._state.role = role

    @property
    def role(self) -> str:
        return self._state.role

    def set_manager_ready(self, ready: bool) -> None:
        with self._lock:
            self._state.manager_ready = ready

    def inject_unavailable(self, on: bool = True) -> None:
        """Make every RPC fail with UNAVAILABLE (as when the pod is gone) until called with False."""
        with self._lock:
            self._state.unavailable = on

    def set_sync_standbys(self, ids: list[tuple[str, str]], num_sync: int = 1, method: str = "FIRST") -> None:
        """Set synchronous_standby_names as (cell, service id) pairs; [] means not configured."""
        with self._lock:
            self._state.sync_standbys = list(ids)
            self._state.num_sync = num_sync
            self._state.sync_method = getattr(mpd, f"SYNCHRONOUS_METHOD_{method}")

    def sync_standbys(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._state.sync_standbys)

    def synchronous_standby_names(self) -> str:
        """The value the real pooler would ALTER SYSTEM into postgresql.auto.conf."""
        with self._lock:
            st = self._state
            method = "ANY" if st.sync_method == mpd.SYNCHRONOUS_METHOD_ANY else "FIRST"
            members = ", ".join(f'"{c}_{n}"' for c, n in st.sync_standbys)
            return f"{method} {st.num_sync} ({members})" if members else ""

    def set_connected(self, ids: list[tuple[str, str]]) -> None:
        with self._lock:
            self._state.connected = list(ids)

    def add_backup(self, backup_id: str, type: str = "full", complete: bool = True) -> None:
        """Append a backup; call in chronological order (pgbackrest info lists oldest first)."""
        with self._lock:
            self._state.backups.append(PeerBackup(backup_id, type, complete))

    def calls(self, method: str | None = None) -> list[object]:
        """Requests received, optionally only those of one RPC method."""
        with self._lock:
            return [req for m, req in self._state.calls if method is None or m == method]

    @property
    def reloads(self) -> int:
        return self._state.reloads

    # --- topology ------------------------------------------------------------------------------------
    def record(self) -> cm.MultiPooler:
        """The MultiPooler record the real pooler would publish (contract §2.4)."""
        return cm.MultiPooler(
            id=cm.ID(component=cm.ID.MULTIPOOLER, cell=self.cell, name=self.service_id),
            database=self.database, table_group=self.table_group, shard=self.shard,
            type=_TYPES[self._state.role], serving_status=cm.SERVING, hostname=self.hostname,
            port_map={"grpc": self.port, "http": 15200, "postgres": 5432, "pgbackrest": 8432},
            pooler_dir="/var/lib/pooler", pg_data_dir="/var/lib/pooler/pg_data",
        )

    def key(self, root: str) -> str:
        return naming.pooler_key(root, self.cell, self.service_id)

    def register(self, etcd_endpoint: str, root: str) -> str:
        """Publish the record at <root>/poolers/multipooler-<cell>-<id>/Pooler; returns the key."""
        key = self.key(root)
        Etcd(etcd_endpoint).put(key, self.record().SerializeToString())
        return key
