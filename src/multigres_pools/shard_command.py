"""What the commands about one MultigresShard in a cluster share (`status`, `switchover`): their
arguments, how they reach the API server, and the one line each failure ends with."""

from __future__ import annotations

import argparse
import socket
import ssl
import sys
from collections.abc import Callable
from typing import TypeVar

from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, KubeError, connect

_T = TypeVar("_T")

EXIT_FAILED, EXIT_CONFIG = 1, 2


class Failure(Exception):
    """The command cannot go on: one line for stderr, and the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The shard, its namespace, and which kubeconfig and context reach its cluster."""
    p.add_argument("shard", help="the MultigresShard's name")
    p.add_argument("-n", "--namespace", default="default", help="its namespace (default %(default)s)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: its current-context)")


def connected(prog: str, args: argparse.Namespace) -> KubeClient | None:
    """A client for the kubeconfig and context asked for; None once it said on stderr why there is none."""
    try:
        return connect(args.kubeconfig, args.context)
    except Exception as exc:  # a missing or broken kubeconfig (or its exec plugin): say which, no traceback
        print(f"{prog}: cannot load the kubeconfig: {exc}", file=sys.stderr)
        return None


def unreachable(server: str, exc: OSError, timeout: float) -> str:
    why = ("nothing listens there" if isinstance(exc, ConnectionRefusedError)
           else "the host name does not resolve here" if isinstance(exc, socket.gaierror)
           else "its certificate is not signed by the kubeconfig's certificate authority"
           if isinstance(exc, ssl.SSLCertVerificationError)
           else f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else "")
    return (f"cannot reach the API server {server}: {exc}" + (f"; {why}" if why else "")
            + " (is the cluster up, and is this the kubeconfig and context you meant?)")


def calling(kube: KubeClient, call: Callable[[], _T]) -> _T:
    """`call` against the API server; a refusal or an unreachable server as the one line the command
    ends with (or, under --watch, shows until the next round, which starts on a fresh connection)."""
    try:
        return call()
    except KubeError as exc:
        raise Failure(f"the API server {kube.creds.server} refused: {exc}") from None
    except OSError as exc:  # refused, unknown host, TLS, timeout: the usual state of an old KUBECONFIG
        kube.close()
        raise Failure(unreachable(kube.creds.server, exc, kube.timeout)) from None
