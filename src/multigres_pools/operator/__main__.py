"""`multigres-pools operator`: watch MultigresShards and their objects, decide each shard in process, and
run playbooks/reconcile.yml for the shards that have something to write."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import policy as spec_policy
from ansible_collections.multigres.pools.plugins.module_utils.state import claims

from .. import cli_help, lease, logs, metrics_access
from . import cpu
from .metrics import Metrics

if TYPE_CHECKING:
    from ansible_collections.multigres.pools.plugins.module_utils.kube.client import Credentials

log = logging.getLogger("multigres_pools.operator")


EXAMPLES = cli_help.examples(
    "multigres-pools operator --all-namespaces                in a pod (the install bundle's Deployment)",
    "multigres-pools operator -n db --kubeconfig ~/.kube/config --no-leader-elect --log-format text",
    "WATCH_NAMESPACE=db,staging multigres-pools operator --max-concurrent-reconciles 4",
)


def parser() -> argparse.ArgumentParser:
    env = os.environ.get
    p = cli_help.parser("multigres-pools operator", __doc__, EXAMPLES)
    p.add_argument("--namespace", "-n", action="append", default=None,
                   help="namespace to watch (repeatable; default: $WATCH_NAMESPACE, comma-separated)")
    p.add_argument("--all-namespaces", action="store_true", help="watch every namespace (needs ClusterRoles)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG)")
    p.add_argument("--playbook", type=Path, default=None,
                   help="reconcile playbook (default: playbooks/reconcile.yml)")
    p.add_argument("--artifacts-dir", type=Path,
                   default=Path(env("RUNNER_ARTIFACTS_DIR", "/tmp/multigres-pools-operator")),
                   help="ansible-runner private data dirs, one per shard")
    p.add_argument("--keep-artifacts", type=int, default=int(env("KEEP_ARTIFACTS", "3")),
                   help="runs kept on disk per shard")
    p.add_argument("--max-concurrent-reconciles", type=int,
                   default=int(env("MAX_CONCURRENT_RECONCILES", "0")) or None,
                   help="reconcile runs at once; default: 2 per CPU of the container's cgroup limit (4 if unlimited), "
                        "at most 1 per 128 MiB of its memory limit above 128 MiB")
    p.add_argument("--batch-size", type=int, default=int(env("RECONCILE_BATCH_SIZE", "10")),
                   help="shards reconciled by one ansible-playbook run: its start-up, half the CPU of a pass, "
                        "is paid once per batch; a batch only takes shards already due (1: one run per shard)")
    p.add_argument("--coalesce", type=float, default=0.1, help="seconds to gather a burst of events")
    p.add_argument("--resync-period", type=float, default=600.0,
                   help="seconds between resyncs: every shard is decided again from the caches (no API request, "
                        "no playbook run unless there is something to write)")
    p.add_argument("--full-check-period", type=float, default=float(env("FULL_CHECK_PERIOD", "21600")),
                   help="seconds between full checks of a shard: a playbook run that lists live whatever the caches "
                        "say (0: never; default 6 h, each shard at its own random offset)")
    p.add_argument("--no-warm-runners", dest="warm_runners", action="store_false",
                   help="start ansible-runner only when a batch is ready, instead of keeping one run per worker "
                        "started and waiting (saves ~100 MiB per worker, costs its start-up on every run)")
    p.add_argument("--agent-stall-after", type=float, default=None,
                   help="seconds a pool pod may wait for the agent (Terminating with its finalizer, or a drain "
                        "not taken up) before the shard reports AgentStalled=True (default: "
                        f"${keys.ENV_AGENT_STALL_AFTER}, else 300)")
    p.add_argument("--shutdown-grace", type=float, default=20.0,
                   help="seconds running reconciles may finish at shutdown before being cancelled")
    p.add_argument("--health-addr", default=env("HEALTH_ADDR", metrics_access.DEFAULT_ADDR),
                   help="host:port serving /healthz, /readyz and /metrics (the bundle binds 0.0.0.0 for the kubelet)")
    metrics_access.add_arguments(p)
    p.add_argument("--no-leader-elect", dest="leader_elect", action="store_false",
                   help="act without holding the Lease (only for a single local instance)")
    lease.add_arguments(p, keys.OPERATOR_LEASE_NAME, env("POD_NAMESPACE"),
                        "namespace of the Lease (default: $POD_NAMESPACE, else the first watched namespace)")
    p.add_argument("--identity", default=env("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
                   help="holder identity in the Lease (default: $POD_NAME, else host-pid)")
    for flag, var, what in (("--allowed-images", spec_policy.ENV_ALLOWED_IMAGES, "images"),
                            ("--allowed-service-accounts", spec_policy.ENV_ALLOWED_SERVICE_ACCOUNTS,
                             "ServiceAccounts"),
                            ("--allowed-secrets", spec_policy.ENV_ALLOWED_SECRETS, "Secrets")):
        p.add_argument(flag, default=env(var, ""),
                       help=f"comma-separated {what} a MultigresShard may name; an entry ending in * is a "
                            f"prefix; empty allows all (default: ${var}; docs/install.md)")
    p.add_argument("--log-level", default=env("LOG_LEVEL", "INFO"),
                   help="DEBUG, INFO, WARNING or ERROR (default: $LOG_LEVEL, else INFO)")
    p.add_argument("--log-format", choices=("json", "text"), default=env("LOG_FORMAT", "json"),
                   help="one JSON object per line, or plain text (default: $LOG_FORMAT, else json)")
    return p


def _setup_logging(level: str, fmt: str) -> None:
    logs.setup(level, fmt)


def _namespaces(args: argparse.Namespace) -> list[str]:
    if args.namespace:
        return cast(list[str], args.namespace)  # action="append" of str
    return [n for n in os.environ.get("WATCH_NAMESPACE", "").split(",") if n]


async def _first(*aws: asyncio.Future[Any] | asyncio.Task[Any]) -> None:
    await asyncio.wait(aws, return_when=asyncio.FIRST_COMPLETED)


# The write-fence file the operator's ansible runs check before every write (module_utils/write_fence).
FENCE_FILE = ".leader-fence"


def _elector(args: argparse.Namespace, creds: Credentials, namespaces: list[str], timing: lease.ElectionTiming,
             on_change: Callable[[bool, str], None]) -> lease.LeaderElector:
    lease_ns = args.lease_namespace or (namespaces[0] if namespaces else None)
    if not lease_ns:
        raise ValueError("leader election needs --lease-namespace (or $POD_NAMESPACE) with --all-namespaces")
    args.artifacts_dir.mkdir(parents=True, exist_ok=True)
    return lease.LeaderElector(lease.lease_api(creds, lease_ns, args.lease_name, timing.call_timeout),
                               args.identity, timing, on_change, fence=args.artifacts_dir / FENCE_FILE)


async def serve(args: argparse.Namespace, timing: lease.ElectionTiming | None = None) -> int:
    from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, load_credentials

    from ..watch import AsyncKube, Informer
    from . import health
    from .cache import CLUSTER_WATCHED, WATCHED
    from .controller import Controller, Settings
    from .invalid import InvalidSpecReporter
    from .runner import DEFAULT_PLAYBOOK, PlaybookRunner

    namespaces = _namespaces(args)
    if not namespaces and not args.all_namespaces:
        log.error("no namespace to watch: pass --namespace, set WATCH_NAMESPACE, or --all-namespaces")
        return 2
    if args.batch_size < 1:
        log.error("--batch-size must be at least 1, got %d", args.batch_size)
        return 2
    if args.agent_stall_after is not None:
        if not (0 < args.agent_stall_after < float("inf")):
            log.error("--agent-stall-after must be a positive number of seconds, got %s", args.agent_stall_after)
            return 2
        # The in-process decisions and the playbook runs read the same threshold (status/stalls.py).
        os.environ[keys.ENV_AGENT_STALL_AFTER] = str(args.agent_stall_after)
    problem = metrics_access.check_arguments(args, "--health-addr", args.health_addr)
    if problem:
        log.error("%s", problem)
        return 2
    try:
        creds = load_credentials(args.kubeconfig)
    except ValueError as exc:  # a missing or broken kubeconfig: named, with what is wrong in it
        log.error("cannot load the kubeconfig: %s", exc)
        return 2
    metrics = Metrics()
    concurrency = args.max_concurrent_reconciles or cpu.default_concurrency()
    loop = asyncio.get_running_loop()
    acquired, lost = asyncio.Event(), asyncio.Event()
    elector: lease.LeaderElector | None = None
    # The playbook runs reach the cluster the way the operator does, and check the write fence.
    envvars = {"KUBECONFIG": str(args.kubeconfig)} if args.kubeconfig else {}
    if os.environ.get(keys.ENV_AGENT_STALL_AFTER):
        envvars[keys.ENV_AGENT_STALL_AFTER] = os.environ[keys.ENV_AGENT_STALL_AFTER]
    if args.leader_elect:
        envvars[keys.ENV_WRITE_FENCE] = str(args.artifacts_dir / FENCE_FILE)
    policy = spec_policy.SpecPolicy(spec_policy.parse_list(args.allowed_images),
                                    spec_policy.parse_list(args.allowed_service_accounts),
                                    spec_policy.parse_list(args.allowed_secrets))
    envvars.update(policy.environment())  # the role passes them to the module (roles/shard/defaults)
    claim_namespaces = (claims.ALL_NAMESPACES,) if args.all_namespaces else tuple(namespaces)
    envvars[claims.ENV_CLAIM_NAMESPACES] = ",".join(claim_namespaces)
    runner = PlaybookRunner(root=args.artifacts_dir, playbook=args.playbook or DEFAULT_PLAYBOOK,
                            keep_artifacts=args.keep_artifacts, envvars=envvars)
    loop_settings = Settings(concurrency=concurrency, coalesce=args.coalesce, resync_period=args.resync_period,
                             shutdown_grace=args.shutdown_grace, batch_size=args.batch_size,
                             full_check_period=args.full_check_period, warm_runners=args.warm_runners,
                             policy=policy, claim_namespaces=claim_namespaces)

    def may_write() -> bool:
        # Before every run and every poll of a running one: a frozen instance that resumes is
        # refused at once, even before its election thread notices.
        return elector is None or (not elector.check() and elector.is_leader())

    controller = Controller(runner, loop_settings, metrics, report_invalid=InvalidSpecReporter(KubeClient(creds)),
                            live=lambda: KubeClient(creds), may_write=may_write)
    metrics.shard_conditions.source = controller.cache.shards

    def changed(leading: bool, reason: str) -> None:  # on the event loop
        metrics.leader.set(1 if leading else 0)
        metrics.leadership_changes.labels("acquired" if leading else "released" if reason == "released"
                                          else "lost").inc()
        if leading:
            acquired.set()
        elif reason != "released":
            controller.abort()
            lost.set()

    def from_thread(leading: bool, reason: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing left to stop
            loop.call_soon_threadsafe(changed, leading, reason)

    if args.leader_elect:
        try:
            elector = _elector(args, creds, namespaces, timing or lease.ElectionTiming(), from_thread)
        except ValueError as exc:
            log.error("%s", exc)
            return 2
    log.info("operator starting: namespaces=%s concurrency=%d batch-size=%d warm-runners=%s "
             "(cgroup limits: cpu %s, memory %s)", namespaces or "*", concurrency, args.batch_size,
             args.warm_runners, cpu.cpu_limit(), cpu.memory_limit())

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    synced = asyncio.Event()

    def ready() -> bool:
        return synced.is_set() and (elector is None or elector.is_leader())

    host, port = metrics_access.split_addr(args.health_addr, "--health-addr")
    gate, tls = metrics_access.build(args, args.health_addr, lambda: KubeClient(creds))
    web = await health.serve(health.make_app(ready, metrics.registry, gate, tls), host, port, tls)
    aio = AsyncKube(creds)
    try:
        if elector is not None:
            # A standby does nothing but take part in the election: no watch, no cache, no run.
            elector.start()
            acquiring = asyncio.create_task(acquired.wait())
            stopping = asyncio.create_task(stop.wait())
            await _first(acquiring, stopping)
            stopping.cancel()
            if not acquiring.done():
                acquiring.cancel()
                await asyncio.to_thread(elector.stop)
                return 0
        # One list+watch per kind and watched namespace (or one per kind cluster-wide).
        scopes: list[str | None] = [None] if args.all_namespaces else list(namespaces)
        informers = [Informer(aio, kind, ns, functools.partial(controller.on_event, kind))
                     for kind in WATCHED for ns in scopes]
        informers += [Informer(aio, kind, None, functools.partial(controller.on_event, kind))
                      for kind in CLUSTER_WATCHED]
        controller.cache.informers = informers
        watching = [asyncio.create_task(i.run(), name=f"watch-{i.kind.kind}-{i.namespace or '*'}")
                    for i in informers]

        async def all_synced() -> None:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            synced.set()
            log.info("caches synced: %d objects, %d shards", controller.cache.size(), len(controller.cache.shards()))

        syncing = asyncio.create_task(all_synced())
        work = asyncio.create_task(controller.run(stop, synced))
        holding = asyncio.create_task(lost.wait())
        waiting = asyncio.create_task(stop.wait())
        await _first(waiting, holding, *watching)
        lost_it = holding.done()
        crashed = next((t for t in watching if t.done() and not t.cancelled() and t.exception()), None)
        stop.set()
        holding.cancel()
        await work
        for task in (*watching, syncing):
            task.cancel()
        await asyncio.gather(*watching, syncing, return_exceptions=True)
        if elector is not None:
            await asyncio.to_thread(elector.stop)  # releases the Lease only if still certainly ours
        metrics.leader.set(0)
        if lost_it:
            log.error("stepped down: every run ended; exiting so that a restart runs as a candidate")
            return 1
        if crashed:
            log.error("exiting: a watch stopped: %s", crashed.exception())
            return 1
        log.info("stopped cleanly")
        return 0
    finally:
        await aio.close()
        await web.cleanup()


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    timing = lease.timing_from(args, cli)
    _setup_logging(args.log_level, args.log_format)
    return asyncio.run(serve(args, timing))


if __name__ == "__main__":
    sys.exit(main())
