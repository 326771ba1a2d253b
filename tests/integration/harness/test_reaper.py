"""A test run killed with SIGKILL leaves its etcd behind; the reaper of the next run kills it, and only it.

The run is a real pytest in a subprocess, with this repository's plugin (tests/conftest.py) and its
own registry dir, so no other run's records are touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multigres_pools.playground import reaper

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[3]

INNER = '''
import os, pathlib, time
from multigres_pools.playground import binaries
from multigres_pools.playground.cluster import Etcd

def test_starts_an_etcd_and_hangs(tmp_path):
    etcd = Etcd(binaries.resolve()["etcd"], tmp_path / "data", tmp_path / "etcd.log")
    etcd.start()
    etcd.wait_ready()
    pathlib.Path(os.environ["REAPER_MARKER"]).write_text(str(etcd.process.pid))
    time.sleep(600)
'''


def _alive(pid: int) -> bool:
    fields = reaper._stat(pid)
    return fields is not None and fields[0] != "Z"


def _wait(what: str, check, deadline_s: float = 60) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_etcd_of_a_killed_run_is_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, marker, test_file = tmp_path / "run", tmp_path / "etcd.pid", tmp_path / "test_inner.py"
    test_file.write_text(INNER)
    env = {**os.environ, reaper.ENV_RUN_DIR: str(runs), "REAPER_MARKER": str(marker)}
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-q",
         f"--basetemp={tmp_path / 'inner'}", f"--rootdir={tmp_path}", str(test_file)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    etcd_pid = None
    try:
        _wait("the inner run's etcd", lambda: marker.exists() and marker.read_text())
        etcd_pid = int(marker.read_text())
        assert list(runs.glob(f"{inner.pid}-*.jsonl")), "the run recorded its spawn"
        os.kill(inner.pid, signal.SIGKILL)  # no teardown, no atexit: the etcd is orphaned
        inner.wait(10)
        assert _alive(etcd_pid), "the etcd outlived its run"

        monkeypatch.setenv(reaper.ENV_RUN_DIR, str(runs))
        killed = reaper.reap_dead_runs()
        assert [g.pgid for g in killed] == [etcd_pid]
        _wait("the etcd to be gone", lambda: not _alive(etcd_pid), 15)
        assert not list(runs.glob("*.jsonl"))
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait(10)
        if etcd_pid is not None and _alive(etcd_pid):
            os.killpg(etcd_pid, signal.SIGKILL)  # this test's own etcd, should the reaper have failed


def test_a_live_run_and_a_reused_pid_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(reaper.ENV_RUN_DIR, str(tmp_path))
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started = reaper.start_time(sleeper.pid)
        me = reaper.start_time(os.getpid())
        live = tmp_path / f"{os.getpid()}-{me}.jsonl"  # this very process: alive
        live.write_text(f'{{"pgid": {sleeper.pid}, "start": {started}, "argv": ["sleep"]}}\n')
        dead = tmp_path / f"{os.getpid()}-{me + 1}.jsonl"  # same pid, another start: a dead run
        dead.write_text(f'{{"pgid": {sleeper.pid}, "start": {started + 1}, "argv": ["sleep"]}}\n')
        assert [g.pgid for g in reaper._groups(dead)] == [sleeper.pid]
        assert reaper.reap_dead_runs() == []  # the dead run's pgid now names another process
        assert live.exists() and not dead.exists() and sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait(10)
