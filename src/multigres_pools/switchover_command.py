"""`multigres-pools switchover SHARD`: move the primary away now, and say how it went.

    multigres-pools switchover orders -n db              # multiorch elects a synchronous standby; waits
    multigres-pools switchover orders -n db --no-wait    # only ask

It sets `pools.multigres.com/switchover-request` on the MultigresShard (docs/operations.md, "Move the
primary") and follows the operator's answer: refused (with the reason), or accepted, then the old
primary's drain until another pod is the primary (`status.switchover`). The operator does the work;
this command only asks and reads, so stopping it (Ctrl-C) stops nothing.

Exit codes: 0 the primary moved (or, with --no-wait, the request was written); 1 refused, not done in
time, no such shard, or the API server refused or cannot be reached; 2 bad arguments or no usable
kubeconfig; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import SwitchoverStatus
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from . import cli_help, shard_command
from .shard_command import EXIT_CONFIG, Failure

PROG = "multigres-pools switchover"
FIELD_MANAGER = "multigres-pools-cli"
POLL_S = 0.5

EXAMPLES = cli_help.examples(
    "multigres-pools switchover orders -n db                   wait until another pod is the primary",
    "multigres-pools switchover orders -n db --no-wait         only write the request",
    "kubectl -n db get mgs orders -o jsonpath='{.status.switchover}'   the operator's answer, later")


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser(PROG, __doc__.split("\n\n")[0], EXAMPLES)
    shard_command.add_arguments(p)
    p.add_argument("--to", default=keys.SWITCHOVER_ANY, metavar="POD",
                   help="the pod to elect (Multigres v0.1.0 cannot elect a chosen pod: the operator refuses "
                        f"anything but {keys.SWITCHOVER_ANY!r} and says why)")
    p.add_argument("--no-wait", action="store_true", help="write the request and exit")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the move (default %(default)g)")
    return p


def _shard(kube: KubeClient, args: argparse.Namespace) -> dict[str, Any]:
    cr = shard_command.calling(kube, lambda: kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, args.namespace,
                                                      args.shard))
    if cr is None:
        raise Failure(f"no MultigresShard {args.shard} in namespace {args.namespace}")
    return dict(cr)


def _shown(cr: dict[str, Any]) -> SwitchoverStatus | None:
    return ShardReader.of(cr).status.switchover


def _answer(cr: dict[str, Any], before: SwitchoverStatus | None) -> SwitchoverStatus | None:
    """status.switchover once it describes this request: the operator removed the annotation and the
    status carries a decision made after the one seen before asking."""
    shown = _shown(cr)
    if keys.ANN_SWITCHOVER_REQUEST in facts.annotations(cr) or shown is None or shown == before:
        return None
    recorded = facts.json_annotation(cr, keys.ANN_SWITCHOVER_STATE) or {}
    return shown if shown.at == recorded.get("at") else None


def _drain_line(kube: KubeClient, namespace: str, pod: str) -> str:
    """Where the old primary's drain is: its state and what blocks it, or that the pod is being replaced."""
    live = shard_command.calling(kube, lambda: kube.get("v1", "Pod", namespace, pod))
    if live is None or facts.is_terminating(live):
        return f"{pod} is being replaced; multiorch elects the new primary"
    ann = facts.annotations(live)
    state, blocked = ann.get(keys.ANN_DRAIN_STATE), ann.get(keys.ANN_DRAIN_BLOCKED)
    return f"drain of {pod}: {state or 'not started'}" + (f" (blocked: {blocked})" if blocked else "")


def _follow(kube: KubeClient, args: argparse.Namespace, before: SwitchoverStatus | None, started: float) -> int:
    said: set[str] = set()
    last = "the operator has not decided (is it running?)"

    def say(line: str) -> None:
        nonlocal last
        if line not in said:  # each line once: the drain's states come in order
            print(line, flush=True)
            said.add(line)
        last = line

    say("waiting for the operator to decide ...")
    while True:
        answer = _answer(_shard(kube, args), before)
        if answer is not None and answer.state == "Refused":
            raise Failure(f"refused: {answer.message}")
        if answer is not None and answer.state == "Completed":
            say(f"done in {time.monotonic() - started:.1f}s: {answer.from_} -> {answer.primary} is the primary")
            return 0
        if answer is not None:
            say(f"accepted: {answer.message}")
            say(_drain_line(kube, args.namespace, str(answer.from_)))
        if time.monotonic() - started > args.timeout:
            raise Failure(f"not done within {args.timeout:g}s: {last}")
        time.sleep(POLL_S)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.to.strip():
        p.error("--to: empty; give a pod name or leave it out")
    if not 0 < args.timeout < float("inf"):
        p.error(f"--timeout: {args.timeout:g} is not a positive number of seconds")
    kube = shard_command.connected(PROG, args)
    if kube is None:
        return EXIT_CONFIG
    try:
        before = _shown(_shard(kube, args))
        started = time.monotonic()
        body = {"metadata": {"annotations": {keys.ANN_SWITCHOVER_REQUEST: args.to}}}
        shard_command.calling(kube, lambda: kube.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, args.namespace,
                                                             args.shard, body, field_manager=FIELD_MANAGER))
        if args.no_wait:
            print(f"requested {keys.ANN_SWITCHOVER_REQUEST}={args.to}; the operator's answer will be in "
                  f"status.switchover")
            return 0
        return _follow(kube, args, before, started)
    except Failure as failure:
        print(f"{PROG}: {failure.message}", file=sys.stderr)
        return failure.code
    finally:
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
