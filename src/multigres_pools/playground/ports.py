"""Loopback ports for the servers the harness starts, without the pick-then-bind race.

`free_port()` asks the kernel for a port that is free *now*; the server binds it a moment later,
and on a busy machine another process may take it in between. etcd and kube-apiserver cannot
report a port they chose themselves, so the harness picks one, starts the server, and when the
server exits saying `address already in use` (`PortConflict`) it picks new ports and starts again:
`start_with_retries` is that loop, `wait_bound` tells a port conflict from any other failure.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger("multigres_pools.playground")

ATTEMPTS = 5
# What Go servers (etcd, kube-apiserver, kube-controller-manager) print when bind(2) fails with EADDRINUSE.
_IN_USE = "address already in use"
T = TypeVar("T")


class PortConflict(RuntimeError):
    """The server exited because a port it was given is taken: start again on other ports."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port free at this instant (the kernel's choice); see the module docstring for the race."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])  # (host, port) of an AF_INET socket


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in ports:
            ports.append(port)
    return ports


def log_size(path: Path) -> int:
    """Where this start's output begins in an appended log (earlier starts' conflicts do not count)."""
    return path.stat().st_size if path.exists() else 0


def _since(path: Path, offset: int) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read().decode(errors="replace")


def wait_bound(process: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float, what: str,
               log_path: Path, offset: int = 0) -> None:
    """Wait until `ready()`; PortConflict when the process exits with `address already in use` in
    its log since `offset`, RuntimeError (with the log tail) when it exits otherwise or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if process.poll() is not None:
            text = _since(log_path, offset)
            if _IN_USE in text:
                raise PortConflict(f"{what}: {_IN_USE} (exit {process.returncode})")
            raise RuntimeError(f"{what} exited with {process.returncode}; log tail:\n{text[-3000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not become ready within {timeout:.0f}s; log tail:\n"
                       f"{_since(log_path, offset)[-3000:]}")


def start_with_retries(start: Callable[[int], T], what: str, attempts: int = ATTEMPTS) -> T:
    """`start(attempt)` until it does not raise PortConflict; `start` picks new ports when `attempt` > 0
    (and cleans up what a failed attempt left). RuntimeError after `attempts` conflicts."""
    for attempt in range(attempts):
        try:
            return start(attempt)
        except PortConflict as exc:
            last = exc
            if attempt + 1 < attempts:
                log.warning("%s; starting again on other ports (attempt %d of %d)", exc, attempt + 2, attempts)
    raise RuntimeError(f"{what}: every one of {attempts} attempts hit a taken port: {last}")
