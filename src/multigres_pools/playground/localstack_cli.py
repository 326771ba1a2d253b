"""`multigres-pools localstack up|down`: a shard on real Multigres v0.1.0 to drive with kubectl and psql.

    multigres-pools localstack up            # prints KUBECONFIG=..., TOPO_ETCD=..., DATABASE_URL=...
    multigres-pools localstack down          # from another terminal (or Ctrl-C the first)

`up` stays in the foreground until `down`, Ctrl-C or SIGTERM, then stops every process, network
namespace and port it started and removes its work directory. The printed variables are also
written to `<workdir>/env` (shell syntax) so another terminal can `source` them; it also puts the
stack's own kubectl and psql (the versions its API server and PostgreSQL run) first on PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from .. import cli_help
from ..signal_flag import SignalFlag
from .realnode.preflight import NODES

DEFAULT_WORKDIR = Path("/tmp/multigres-pools-localstack")
PID_FILE = "localstack.pid"
ENV_FILE = "env"
BIN_DIR = "bin"  # links to the stack's kubectl and psql, first on the env file's PATH
DOWN_NOTE_EVERY_S = 5.0


UP_EXAMPLES = cli_help.examples(
    "multigres-pools localstack up                     then, in another terminal:",
    "source /tmp/multigres-pools-localstack/env && kubectl get mgs -A && psql \"$DATABASE_URL\"",
    "multigres-pools localstack up --replicas 2 --namespace demo",
    "multigres-pools localstack up --node real          containers on a real kubelet (make images first)",
    "multigres-pools localstack up --no-shard          bring your own MultigresShard")
DOWN_EXAMPLES = cli_help.examples("multigres-pools localstack down", "multigres-pools localstack down --timeout 300")


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser("multigres-pools localstack", __doc__.split("\n\n")[0], UP_EXAMPLES)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="start the stack and a sample shard; stay up until down or Ctrl-C",
                        epilog=UP_EXAMPLES, formatter_class=cli_help.HelpFormatter)
    up.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                    help="where everything lives (default %(default)s)")
    up.add_argument("--replicas", type=int, default=3, help="replicas of the sample shard (default %(default)s)")
    up.add_argument("--namespace", default="play", help="namespace of the sample shard (default %(default)s)")
    up.add_argument("--no-shard", action="store_true", help="start the stack only; apply your own MultigresShard")
    up.add_argument("--node", choices=NODES, default="process",
                    help="who runs the pods: the process kubelet, or a real kubelet with containerd, CNI, "
                         "kube-proxy, CoreDNS and NetworkPolicy, the operator and agent installed from the "
                         "bundle (docs/playground.md; default %(default)s)")
    down = sub.add_parser("down", help="stop a stack started by `up`", epilog=DOWN_EXAMPLES,
                          formatter_class=cli_help.HelpFormatter)
    down.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="as given to up (default %(default)s)")
    down.add_argument("--timeout", type=float, default=120, help="seconds to wait for it to stop (default %(default)s)")
    return p


def _running_pid(workdir: Path) -> int | None:
    try:
        pid = int((workdir / PID_FILE).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def client_tools(bin_dir: Path) -> list[str]:
    """Link the stack's kubectl (built with its API server) and PostgreSQL's psql into bin_dir: the
    docs' commands then run as written on a machine that has neither. Returns the names linked."""
    from . import node_binaries, toolchain

    tools = {"kubectl": node_binaries.cached().get("kubectl")}
    if (tool := toolchain.available()) is not None:
        tools["psql"] = tool.postgres_bin / "psql"
    linked = []
    for name, target in tools.items():
        if target is not None and os.access(target, os.X_OK):
            bin_dir.mkdir(exist_ok=True)
            (bin_dir / name).unlink(missing_ok=True)
            (bin_dir / name).symlink_to(target)
            linked.append(name)
    return linked


def write_env(workdir: Path, lines: dict[str, str]) -> str:
    """`<workdir>/env`: the variables as exports, then the stack's client tools first on PATH."""
    text = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in lines.items())
    if client_tools(workdir / BIN_DIR):
        text += f'export PATH={shlex.quote(str(workdir / BIN_DIR))}:"$PATH"\n'
    (workdir / ENV_FILE).write_text(text)
    return text


def up(args: argparse.Namespace) -> int:
    from .multigres_stack import MultigresStack

    if args.replicas < 1:
        print("multigres-pools localstack: --replicas must be at least 1", file=sys.stderr)
        return 2
    if (pid := _running_pid(args.workdir)) is not None:
        print(f"multigres-pools localstack: already up in {args.workdir} (pid {pid}); "
              f"run `multigres-pools localstack down --workdir {args.workdir}` first", file=sys.stderr)
        return 2
    try:
        args.workdir.mkdir(parents=True, exist_ok=True)
        (args.workdir / PID_FILE).write_text(str(os.getpid()))
    except OSError as exc:
        print(f"multigres-pools localstack: --workdir {args.workdir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    stop = SignalFlag()  # set by the handlers below (a threading.Event could deadlock there)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stack = MultigresStack(args.workdir / "stack", namespace=args.namespace, progress=lambda s: print(s, flush=True),
                           node=args.node)
    try:
        stack.start()
        lines = {"KUBECONFIG": str(stack.kubeconfig), "TOPO_ETCD": f"http://{stack.topo_address}",
                 "TOPO_ROOT": "/multigres/global"}
        if not args.no_shard:
            started = time.monotonic()
            stack.apply_shard(stack.sample_shard(replicas=args.replicas))
            print(f"applied MultigresShard {args.namespace}/play ({args.replicas} replicas); waiting for it to serve",
                  flush=True)
            primary = stack.wait_serving("play", replicas=args.replicas, timeout=600,
                                         progress=lambda line: print(f"  {line}", flush=True))
            print(f"serving after {time.monotonic() - started:.0f}s: primary {primary.pod} ({primary.ip}), "
                  f"synchronous_standby_names = {primary.synchronous_standby_names}", flush=True)
            gateways = [p for p in stack.pods(keys.COMPONENT_MULTIGATEWAY) if facts.condition_true(p, "Ready")]
            if gateways:
                lines["DATABASE_URL"] = stack.url(gateways[0]["status"]["podIP"], port=layout.MULTIGATEWAY_PG)
            lines["PRIMARY_URL"] = stack.url(primary.ip)
        text = write_env(args.workdir, lines)
        print(text + f"# also in {args.workdir / ENV_FILE}; stop with Ctrl-C or "
              f"`multigres-pools localstack down --workdir {args.workdir}`", flush=True)
        stop.wait()
        print("stopping ...", flush=True)
    finally:
        stack.stop()
        shutil.rmtree(stack.workdir, ignore_errors=True)  # volumes, logs: a playground keeps nothing
        shutil.rmtree(args.workdir / BIN_DIR, ignore_errors=True)
        for name in (ENV_FILE, PID_FILE):
            (args.workdir / name).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            args.workdir.rmdir()  # only when empty: never a directory the user keeps other files in
    print("stopped; nothing left running", flush=True)
    return 0


def down(args: argparse.Namespace) -> int:
    pid = _running_pid(args.workdir)
    if pid is None:
        print(f"multigres-pools localstack: nothing is up in {args.workdir}", file=sys.stderr)
        return 1
    os.kill(pid, signal.SIGTERM)
    print(f"stopping the stack in {args.workdir} (pid {pid}) ...", flush=True)
    started = time.monotonic()
    deadline, next_note = started + args.timeout, started + DOWN_NOTE_EVERY_S
    while _running_pid(args.workdir) == pid and time.monotonic() < deadline:
        time.sleep(0.5)
        if time.monotonic() >= next_note:  # its processes stop one after another: say it is not stuck
            print(f"  still stopping after {time.monotonic() - started:.0f}s", flush=True)
            next_note += DOWN_NOTE_EVERY_S
    if _running_pid(args.workdir) == pid:
        print(f"multigres-pools localstack: pid {pid} still running after {args.timeout:.0f}s", file=sys.stderr)
        return 1
    print(f"stopped the stack in {args.workdir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return up(args) if args.action == "up" else down(args)


if __name__ == "__main__":
    sys.exit(main())
