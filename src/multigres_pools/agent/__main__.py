"""`multigres-pools agent` / `python -m multigres_pools.agent`: run the data-plane agent.

It watches pool pods (label app.kubernetes.io/component=shard-pool) and MultigresShards (watches.py),
holds a Lease so only one replica acts, serves /healthz, /readyz and /metrics, and logs JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import (
    Credentials,
    KubeClient,
    load_credentials,
)

from .. import cli_help, dataplane, lease, logs, metrics_access
from ..dataplane.base import STUCK_START_S, DataPlane
from ..dataplane.etcd import EtcdTLS
from ..dataplane.grpc_tls import GrpcTLS
from ..podaddress import PodAddresses
from . import settling, trust
from .context import AgentConfig, Context
from .core import Agent
from .kube import DEFAULT_REQUEST_TIMEOUT_S, Kube
from .metrics import Metrics

log = logging.getLogger("multigres_pools.agent")


EXAMPLES = cli_help.examples(
    "multigres-pools agent                                   in a pod: in-cluster config, every namespace",
    "multigres-pools agent --kubeconfig ~/.kube/config --namespace db --http 127.0.0.1:8081",
    "multigres-pools agent --etcd-ca /tls/ca.crt --etcd-cert /tls/tls.crt --etcd-key /tls/tls.key",
    "multigres-pools agent --standalone --namespace db --stall-after 120   one replica, no Lease",
)


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser("multigres-pools agent", __doc__.splitlines()[0], EXAMPLES)
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    p.add_argument("--namespace", action="append", default=[],
                   help="namespace to watch (repeatable; default: all namespaces)")
    p.add_argument("--multigres-version", default=keys.DEFAULT_MULTIGRES_VERSION.value,
                   choices=[v.value for v in keys.MultigresVersion],
                   help="Multigres version of shards that declare none (a MultigresShard's "
                        "spec.multigres.version wins)")
    p.add_argument("--era", choices=dataplane.ERAS, help="older spelling of --multigres-version (a = d782aa06)")
    p.add_argument("--etcd-ca", help="CA bundle for the topology etcd (https endpoints)")
    p.add_argument("--etcd-cert", help="client certificate for the topology etcd")
    p.add_argument("--etcd-key", help="client key for the topology etcd")
    p.add_argument("--grpc-ca", help="CA bundle that signed multipooler's gRPC certificate (its --grpc-cert); "
                                     "enables TLS to multipooler")
    p.add_argument("--grpc-cert", help="client certificate for multipooler's gRPC (its --grpc-ca asks for one)")
    p.add_argument("--grpc-key", help="client key for --grpc-cert")
    p.add_argument("--rpc-timeout", type=float, default=10.0, help="seconds per multipooler RPC")
    p.add_argument("--kube-timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT_S,
                   help="seconds per Kubernetes API request of a shard pass (a timed-out pass is retried)")
    p.add_argument("--http", default=metrics_access.DEFAULT_ADDR,
                   help="host:port of /healthz, /readyz and /metrics (the bundle binds 0.0.0.0 for the kubelet)")
    metrics_access.add_arguments(p)
    p.add_argument("--poll-interval", type=float, default=5.0, help="seconds between periodic shard passes")
    p.add_argument("--settle-interval", type=float, default=1.0,
                   help="seconds between passes of a shard with a drain under way or a new pod waiting for its "
                        "verdict (0: only the periodic pass)")
    p.add_argument("--stall-after", type=float, default=300.0, help="seconds before a blocked drain is DrainStalled")
    p.add_argument("--topology-stall-after", type=float, default=60.0,
                   help="seconds of failing topology etcd reads before a shard reports TopologyUnreachable")
    p.add_argument("--stuck-start-after", type=float, default=STUCK_START_S,
                   help="seconds a multipooler may be starting a PostgreSQL that is not running before its pod "
                        "is drained and recreated (Multigres v0.1.0 never starts it again)")
    p.add_argument("--backup-interval", type=float, default=300.0, help="seconds between backup health checks")
    p.add_argument("--backup-stale-after", type=float, default=25 * 3600.0,
                   help="default BackupHealthy threshold in seconds (the shard's backup.healthThreshold wins)")
    p.add_argument("--no-prune", action="store_true", help="never delete pooler records that match no pod")
    p.add_argument("--no-register", action="store_true", help="never register the database and cells")
    p.add_argument("--no-hurry-handover", action="store_true",
                   help="when the primary's pod is deleted, leave the new primary's election to multiorch's own "
                        "failover grace (4-12 s on v0.1.0) instead of asking it to act at once")
    p.add_argument("--primary-drain-settle", type=float, default=30.0,
                   help="Multigres v0.1.0: seconds a primary's drain waits for every other standby to stream from "
                        "it, so that multiorch is free to elect its successor at once (0: no wait)")
    p.add_argument("--owned-pods-only", action="store_true",
                   help="act only on pool pods controlled by a MultigresShard (the install bundle sets it); "
                        "without it, pods with no controller (shards driven from vars) are served too")
    p.add_argument("--shard-selector", default="",
                   help="act only for MultigresShards whose labels match this equality-based selector "
                        "(`team=db,tier!=test`); pods with no MultigresShard are then ignored")
    lease.add_arguments(p, keys.AGENT_LEASE_NAME, os.environ.get("POD_NAMESPACE", "default"),
                        "namespace of the Lease (default: $POD_NAMESPACE, else default)")
    p.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname(),
                   help="holder identity in the Lease (default: $POD_NAME, else the host name)")
    p.add_argument("--standalone", action="store_true", help="no Lease: act at once (one replica only!)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    return p


def default_version(args: argparse.Namespace) -> keys.MultigresVersion:
    """The version of shards that declare none: --era when given (older spelling), else --multigres-version."""
    return dataplane.make(args.era).version if args.era else keys.MultigresVersion(args.multigres_version)


@dataclass
class Runtime:
    """Everything main() starts; tests drive it with start()/stop() in a thread."""

    args: argparse.Namespace
    agent: Agent
    creds: Credentials
    timing: lease.ElectionTiming = field(default_factory=lease.ElectionTiming)
    stop_flag: threading.Event = field(default_factory=threading.Event)
    ready_flag: threading.Event = field(default_factory=threading.Event)
    elector: lease.LeaderElector | None = None
    # Why leadership was lost (the agent then stops and exits 1), None if it was not.
    lost: str | None = None

    def is_leader(self) -> bool:
        return self.agent.is_leader()

    def periodic(self) -> None:
        for full in settling.rounds(self.args.poll_interval, self.args.settle_interval, self.stop_flag.wait,
                                    time.monotonic):
            try:
                self.agent.tick() if full else self.agent.settle()
            except Exception:
                log.exception("periodic pass failed")

    def healthy(self) -> tuple[bool, str]:
        return True, f"ok, {self.agent.passes} passes"

    def ready(self) -> tuple[bool, str]:
        if self.elector is not None and not self.agent.is_leader():
            return True, "standby"  # watches start once leading
        if not self.ready_flag.is_set():
            return False, "watches not started"
        if self.agent.last_error:
            return False, self.agent.last_error
        return True, "leader" if self.agent.is_leader() else "standby"

    def run(self) -> None:
        from .server import serve
        from .watches import watch_until_stopped

        if self.args.standalone:
            self.agent.ctx.metrics.leader.set(1)  # always acting: what the AgentNoLeader alert counts
        else:
            self.elector = self._elector()
            self.elector.start()
        host, port = metrics_access.split_addr(self.args.http, "--http")
        gate, tls = metrics_access.build(self.args, self.args.http, lambda: KubeClient(self.creds))
        server = serve(host, port, self.agent.ctx.metrics.registry, self.healthy, self.ready, gate, tls)
        # A standby does nothing but take part in the election: no watch, no periodic pass.
        while self.elector is not None and not self.stop_flag.is_set():
            if self.elector.wait_leading(timeout=0.5):
                break
        periodic = threading.Thread(target=self.periodic, name="periodic", daemon=True)
        periodic.start()
        try:
            if not self.stop_flag.is_set():
                asyncio.run(watch_until_stopped(self.agent, self.creds, self.args.namespace or None,
                                                self.stop_flag, self.ready_flag))
        finally:
            self.stop_flag.set()
            server.shutdown()
            # A pass still running finishes (or is refused) before the Lease is handed over.
            periodic.join(timeout=60)
            if self.elector is not None:
                self.elector.stop()  # releases the Lease only if still certainly ours
            self.agent.ctx.close()

    def _elector(self) -> lease.LeaderElector:
        elector = lease.LeaderElector(
            lease.lease_api(self.creds, self.args.lease_namespace, self.args.lease_name, self.timing.call_timeout),
            self.args.identity, self.timing, self._leadership)
        # Asked before every side effect: a resumed, frozen agent is refused before its election
        # thread even runs again.
        self.agent.ctx.may_act = lambda: not elector.check() and elector.is_leader()
        return elector

    def _leadership(self, leading: bool, reason: str) -> None:
        metrics = self.agent.ctx.metrics
        metrics.leader.set(1 if leading else 0)
        metrics.leadership_changes.labels("acquired" if leading else "released" if reason == "released"
                                          else "lost").inc()
        if not leading and reason != "released":
            self.lost = reason
            self.stop_flag.set()  # the watches and the periodic pass stop; main() exits 1


def build(argv: list[str] | None = None, dial_host: Callable[[str], str] | None = None,
          **overrides: Any) -> Runtime:
    """The agent from its arguments; `dial_host` maps a pooler's registered hostname to the address to
    dial (default: the IP of the pod the agent last listed under that name, else the name itself)."""
    p = parser()
    args = p.parse_args(argv)
    for flag in ("kube_timeout", "stuck_start_after", "poll_interval"):
        value = getattr(args, flag)
        if not 0 < value < float("inf"):
            p.error(f"--{flag.replace('_', '-')}: {value} is not a positive number of seconds")
    # 0 is allowed: stalled at the first blocked step, at the first failed read, no settle passes, no wait.
    for flag in ("stall_after", "topology_stall_after", "settle_interval", "primary_drain_settle"):
        value = getattr(args, flag)
        if not 0 <= value < float("inf"):
            p.error(f"--{flag.replace('_', '-')}: {value} is not a number of seconds, 0 or more")
    problem = metrics_access.check_arguments(args, "--http", args.http)
    if problem:
        p.error(problem)
    for flag in ("grpc_ca", "grpc_cert", "grpc_key", "etcd_ca", "etcd_cert", "etcd_key"):
        path = getattr(args, flag)
        if path and not os.path.isfile(path):
            p.error(f"--{flag.replace('_', '-')}: {path} is not a readable file")
    try:
        grpc_tls = GrpcTLS(args.grpc_ca, args.grpc_cert, args.grpc_key) if (
            args.grpc_ca or args.grpc_cert or args.grpc_key) else None
    except ValueError as exc:
        p.error(str(exc))
    try:
        trust.parse_shard_selector(args.shard_selector)
    except ValueError as exc:
        p.error(f"--shard-selector: {exc}")
    timing = lease.timing_from(args, p)
    try:
        creds = load_credentials(args.kubeconfig)
    except ValueError as exc:  # a missing or broken kubeconfig: named, with what is wrong in it
        p.error(f"cannot load the kubeconfig: {exc}")
    tls = EtcdTLS(args.etcd_ca, args.etcd_cert, args.etcd_key) if args.etcd_ca or args.etcd_cert else None
    config = AgentConfig(
        stall_after_s=args.stall_after, topology_stall_after_s=args.topology_stall_after,
        poll_interval_s=args.poll_interval,
        backup_interval_s=args.backup_interval, backup_stale_after_s=args.backup_stale_after,
        prune=not args.no_prune, register_topology=not args.no_register,
        allow_unowned_pods=not args.owned_pods_only, shard_selector=args.shard_selector,
        hurry_handover=not args.no_hurry_handover, stuck_start_after_s=args.stuck_start_after,
        primary_drain_settle_s=args.primary_drain_settle,
    )
    version = default_version(args)
    addresses = PodAddresses()
    dial = dial_host or addresses.dial_host

    def plane_factory(declared: keys.MultigresVersion) -> DataPlane:
        return dataplane.for_version(declared, etcd_tls=tls, rpc_timeout=args.rpc_timeout, dial_host=dial,
                                     grpc_tls=grpc_tls)

    # A given adapter (tests, the local stack's era-A doubles) serves every shard, whatever it declares.
    pinned = overrides.pop("dataplane", None)
    dp = pinned or plane_factory(version)
    kube = Kube(KubeClient(creds, timeout=args.kube_timeout, user_agent="multigres-pools-agent"))
    ctx = Context(kube=kube, dataplane=dp, config=config, metrics=Metrics(),
                  plane_factory=None if pinned else plane_factory, pod_addresses=addresses, **overrides)
    return Runtime(args, Agent(ctx), creds, timing)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logs.setup(args.log_level)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1` dumps every thread's stack
    runtime = build(argv)
    # Ctrl-C and SIGTERM stop the watches, the periodic pass and a standby waiting for the Lease.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: runtime.stop_flag.set())
    log.info("agent starting", extra={"identity": args.identity, "version": runtime.agent.ctx.dataplane.version,
                                      "namespaces": args.namespace or "all", "standalone": args.standalone})
    runtime.run()
    if runtime.lost:
        log.error("stepped down: exiting so that a restart runs as a candidate")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
