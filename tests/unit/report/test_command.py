"""The status command around the screen: colour on a terminal only (NO_COLOR, --color), `--watch`
redrawing a terminal and ending quietly on Ctrl-C, and a reader that stops reading."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.report.colour import wanted
from multigres_pools.report.command import _CtrlC, watch_argv

CLI = [sys.executable, "-m", "multigres_pools.cli"]


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A real pseudo-terminal: (the program's side, ours)."""
    ours, theirs = pty.openpty()
    yield theirs, ours
    for fd in (ours, theirs):
        with contextlib.suppress(OSError):  # the program's side may be closed already
            os.close(fd)


def test_colour_on_a_terminal_unless_no_color_or_a_dumb_terminal(terminal) -> None:
    tty = os.fdopen(os.dup(terminal[0]), "w")
    try:
        assert wanted("auto", tty, {}) and wanted("auto", tty, {"NO_COLOR": ""})  # empty: not set (no-color.org)
        assert not wanted("auto", tty, {"NO_COLOR": "1"}) and not wanted("auto", tty, {"TERM": "dumb"})
        assert wanted("always", tty, {"NO_COLOR": "1"}) and not wanted("never", tty, {})
    finally:
        tty.close()
    assert not wanted("auto", io.StringIO(), {}) and wanted("always", io.StringIO(), {})


def test_watch_takes_seconds_only_when_a_number_follows() -> None:
    assert watch_argv(["play", "--watch"]) == ["play", "--watch=2"]
    assert watch_argv(["--watch", "play", "-n", "x"]) == ["--watch=2", "play", "-n", "x"]
    assert watch_argv(["play", "-w", "0.5"]) == ["play", "-w", "0.5"]


@pytest.fixture
def refused(tmp_path: Path) -> Iterator[Path]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        config = tmp_path / "kubeconfig"
        config.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{s.getsockname()[1]}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n")
        yield config


def _read_until(fd: int, needle: bytes, count: int, timeout: float = 30) -> bytes:
    got, deadline = b"", time.monotonic() + timeout
    while got.count(needle) < count and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            got += os.read(fd, 65536)
    return got


def test_watch_redraws_a_terminal_and_ctrl_c_ends_it_quietly(terminal, refused) -> None:
    theirs, ours = terminal
    proc = subprocess.Popen([*CLI, "status", "play", "--watch", "0.2", "--kubeconfig", str(refused)],
                            stdin=theirs, stdout=theirs, stderr=subprocess.PIPE)
    try:
        shown = _read_until(ours, b"until Ctrl-C", 2).decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    assert shown.count("\x1b[H\x1b[2J") >= 2  # the screen is cleared and drawn again
    assert "cannot reach the API server" in shown and "every 0.2s until Ctrl-C · " in shown
    assert proc.stderr is not None and proc.stderr.read() == b""


def test_a_reader_that_stops_reading_ends_watch_with_141_and_no_message(refused) -> None:
    proc = subprocess.Popen([*CLI, "status", "play", "--watch", "0.1", "--kubeconfig", str(refused)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert "cannot reach the API server" in proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=30) == 141
    assert proc.stderr.read() == ""


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig whose API server accepts connections and never answers: a round that hangs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        config = tmp_path / "kubeconfig"
        config.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{s.getsockname()[1]}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n")
        yield config


def _ctrl_c_as_timeout_sends_it(proc: subprocess.Popen[bytes]) -> None:
    """`timeout -s INT` signals its child, then the child's whole process group: two SIGINTs."""
    proc.send_signal(signal.SIGINT)
    os.killpg(proc.pid, signal.SIGINT)


@pytest.mark.parametrize("delay", [0.05, 0.13, 0.21, 0.34, 0.55, 0.89])
def test_ctrl_c_sent_twice_at_once_ends_watch_with_0_whenever_it_lands(refused, tmp_path, delay: float) -> None:
    # A KeyboardInterrupt raised inside a library's finalizer used to be swallowed (the watch went on
    # forever), and a late second copy killed the exit (130): each delay lands at another moment.
    shown = tmp_path / "shown"
    with shown.open("wb") as out:  # a file, not a pipe: a full pipe nobody reads would block the watch
        proc = subprocess.Popen([*CLI, "status", "play", "--watch", "0.05", "--kubeconfig", str(refused)],
                                stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while b"cannot reach the API server" not in shown.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)  # watching
        time.sleep(delay)
        _ctrl_c_as_timeout_sends_it(proc)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    assert proc.stderr is not None and proc.stderr.read() == b""


def test_ctrl_c_waits_for_the_round_and_a_second_one_ends_it_at_once(silent) -> None:
    proc = subprocess.Popen([*CLI, "status", "play", "--watch", "--kubeconfig", str(silent)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(3)  # started, and asking an API server that never answers
        _ctrl_c_as_timeout_sends_it(proc)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)  # one Ctrl-C (sent twice): the round in hand is answered first
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130
    finally:
        proc.kill()
    assert proc.stderr is not None and proc.stderr.read().decode() == "\nmultigres-pools status: interrupted\n"


@pytest.mark.timeout(60)
def test_ctrl_c_wakes_the_watch_from_its_sleep_without_taking_a_lock() -> None:
    """The handler runs in the main thread at whatever instant the signal lands, possibly inside the
    watch's own wait: it may only write to the pipe the wait sleeps on (a threading.Event's set()
    there could deadlock on the lock that wait holds, which once hung the command until killed)."""
    ctrl_c = _CtrlC()
    before = signal.signal(signal.SIGINT, ctrl_c)
    try:
        assert not ctrl_c.wait(0.01) and not ctrl_c.is_set()
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        assert ctrl_c.wait(3600)  # not woken: the test's timeout fails it
        ctrl_c(signal.SIGINT, None)  # the same press again (within SAME_PRESS_S): nothing more happens
        assert ctrl_c.wait(0) and ctrl_c.is_set()
    finally:
        signal.signal(signal.SIGINT, before)
        ctrl_c.close()
