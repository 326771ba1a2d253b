"""`multigres-pools status SHARD`: the one screen an operator reads during an incident.

    multigres-pools status play -n play                 # healthy, or what is wrong; pods, replication, backups
    multigres-pools status play -n play --watch         # redrawn every 2 s until Ctrl-C
    multigres-pools status play -n play -o json         # the same for scripts

It reads the MultigresShard and its pods from the API server, and asks the data plane (the topology
etcd and the poolers, with the adapter the shard declares) what the agent would see: the confirmed
primary, each pooler's WAL position, the synchronous set and cohort, and the backups. What cannot be
reached is reported as such, with the address and what to try, never guessed. `--dial-pod-ips`
dials poolers at their pod IPs (from outside the cluster network), never their registered hostnames.

Exit codes: 0 shown (also after Ctrl-C ends --watch); 1 no such shard, or the API server refused or
cannot be reached; 2 bad arguments or no usable kubeconfig; 130 interrupted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import os
import shutil
import signal
import sys
import time

from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, KubeError
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from .. import cli_help, shard_command
from ..cli_guard import EXIT_INTERRUPTED
from ..podaddress import pod_address, pod_address_unless_resolvable
from ..shard_command import EXIT_CONFIG, Failure
from ..signal_flag import SignalFlag
from . import as_json, colour, screen
from .gather import gather
from .model import Report

PROG = "multigres-pools status"
WATCH_DEFAULT_S = 2.0
CLEAR = "\x1b[H\x1b[2J"

EXAMPLES = cli_help.examples(
    "multigres-pools status orders -n db                       inside or outside the cluster network",
    "multigres-pools status orders -n db --watch 5             redraw every 5 s until Ctrl-C",
    "multigres-pools status play -n play --dial-pod-ips         only pod IPs, never cluster DNS names",
    "multigres-pools status orders -n db -o json | jq .attention",
    "NO_COLOR=1 multigres-pools status orders -n db            no colour (or --color never)")


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser(PROG, __doc__.split("\n\n")[0], EXAMPLES)
    shard_command.add_arguments(p)
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="format (default %(default)s)")
    p.add_argument("-w", "--watch", nargs="?", type=float, const=WATCH_DEFAULT_S, metavar="SECONDS",
                   help=f"redraw every SECONDS (default {WATCH_DEFAULT_S:g}) until Ctrl-C; when stdout is not a "
                        "terminal, print each screen after a blank line")
    p.add_argument("--color", choices=colour.CHOICES, default="auto",
                   help="colour: auto (on a terminal, unless NO_COLOR is set), always or never (default %(default)s)")
    p.add_argument("--dial-pod-ips", action="store_true",
                   help="dial poolers at their pod IPs, never their registered hostnames (by default a "
                        "hostname that does not resolve here is dialled at its pod's IP)")
    p.add_argument("--rpc-timeout", type=float, default=5.0, help="seconds per data-plane call (default %(default)s)")
    return p


def watch_argv(argv: list[str]) -> list[str]:
    """`--watch` before the shard name would take the name as its SECONDS: give it its default instead."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg in ("-w", "--watch") and (i + 1 == len(out) or not _number(out[i + 1])):
            out[i] = f"--watch={WATCH_DEFAULT_S:g}"
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _report(kube: KubeClient, args: argparse.Namespace) -> Report:
    address = pod_address if args.dial_pod_ips else pod_address_unless_resolvable

    def dial(host: str) -> str:
        try:
            return address(kube, host)
        except (KubeError, OSError):  # the API server failed this one lookup: dial the name as registered
            return host

    try:
        return shard_command.calling(kube, lambda: gather(kube, args.namespace, args.shard, dial_host=dial,
                                                          dial_pod_ips=args.dial_pod_ips,
                                                          rpc_timeout=args.rpc_timeout))
    except LookupError as exc:
        raise Failure(str(exc)) from None
    except http.client.InvalidURL as exc:
        raise Failure(f"the kubeconfig's server {kube.creds.server!r} is not a URL: {exc}", EXIT_CONFIG) from None


def _width() -> int:
    return max(60, shutil.get_terminal_size((100, 24)).columns)


def _show(report: Report, args: argparse.Namespace, paint: colour.Paint) -> str:
    return as_json.render(report) if args.output == "json" else screen.render(report, width=_width(), paint=paint)


class _CtrlC(SignalFlag):
    """SIGINT while --watch runs: the first ends the watch once the round in hand is answered (each
    call gives up after --rpc-timeout), a later one ends the command at once (130).

    Never a KeyboardInterrupt: raised at an arbitrary point it can land in a library's finalizer,
    which swallows it ("Exception ignored in ...") and the watch runs on forever. Nor a
    threading.Event (signal_flag.py: that once hung the command until killed). Two signals within
    SAME_PRESS_S are one Ctrl-C: `timeout -s INT` and some supervisors send it to the process and
    again to its process group."""

    SAME_PRESS_S = 0.5

    def __init__(self) -> None:
        super().__init__()
        self._first = 0.0

    def __call__(self, signum: int, frame: object) -> None:
        if not self.is_set():
            self._first = time.monotonic()
            self.set()
        elif time.monotonic() - self._first > self.SAME_PRESS_S:
            os.write(2, f"\n{PROG}: interrupted\n".encode())
            os._exit(EXIT_INTERRUPTED)  # the user insists: do not wait for the calls in flight


def _watch(kube: KubeClient, args: argparse.Namespace, paint: colour.Paint) -> int:
    ctrl_c = _CtrlC()
    signal.signal(signal.SIGINT, ctrl_c)
    try:
        _redraw(kube, args, paint, ctrl_c)
    finally:
        # Done: a late copy of the same Ctrl-C must not kill the exit (Python restores the default
        # action while it shuts down).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ctrl_c.close()
    return 0  # Ctrl-C is how --watch ends


def _redraw(kube: KubeClient, args: argparse.Namespace, paint: colour.Paint, stop: _CtrlC) -> None:
    redraw = args.output == "text" and sys.stdout.isatty()
    first = True
    while not stop.is_set():
        try:
            body = _show(_report(kube, args), args, paint)
        except Failure as failure:
            if failure.code == EXIT_CONFIG:
                raise
            body = f"{PROG}: {failure.message}\n"  # the cluster may come back: keep watching
        if stop.is_set():
            return  # Ctrl-C came during the round: the screen already shown stays the last one
        if redraw:
            stamp = facts.format_time(dt.datetime.now(dt.UTC))
            sys.stdout.write(f"{CLEAR}{body}\nevery {args.watch:g}s until Ctrl-C · {stamp}\n")
        else:
            sys.stdout.write(("" if first else "\n") + body)
        sys.stdout.flush()
        first = False
        stop.wait(args.watch)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(watch_argv(sys.argv[1:] if argv is None else argv))
    if args.watch is not None and not 0 < args.watch < float("inf"):
        p.error(f"--watch: {args.watch:g} is not a positive number of seconds")
    kube = shard_command.connected(PROG, args)
    if kube is None:
        return EXIT_CONFIG
    paint = colour.Paint(colour.wanted(args.color, sys.stdout, os.environ))
    try:
        if args.watch is not None:
            return _watch(kube, args, paint)
        sys.stdout.write(_show(_report(kube, args), args, paint))
        return 0
    except Failure as failure:
        print(f"{PROG}: {failure.message}", file=sys.stderr)
        return failure.code
    finally:
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
