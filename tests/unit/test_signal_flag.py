"""SignalFlag: what a signal handler sets and the main thread sleeps on (signal_flag.py)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from multigres_pools.signal_flag import SignalFlag


@pytest.mark.timeout(60)
def test_a_signal_wakes_a_wait_without_a_timeout_and_a_timeout_ends_one_unset() -> None:
    flag = SignalFlag()
    before = signal.signal(signal.SIGUSR2, lambda *_: flag.set())
    try:
        assert flag.wait(0.01) is False and not flag.is_set()
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGUSR2)).start()
        assert flag.wait() is True  # never woken: the test's timeout fails it
        flag.set()  # again: nothing more is written, nothing blocks
        assert flag.wait(0) and flag.wait() and flag.is_set()
    finally:
        signal.signal(signal.SIGUSR2, before)
        flag.close()
