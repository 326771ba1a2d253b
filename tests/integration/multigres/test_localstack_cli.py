"""`multigres-pools localstack up` as a user runs it: it prints what to export, the printed URLs
answer SQL (through the multigateway and at the primary), `localstack down` from elsewhere stops it,
and nothing it started is left behind."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.localstack_cli import ENV_FILE

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "multigres_pools.cli", "localstack", *args]


def _exports(path: Path) -> dict[str, str]:
    return {k: v for k, _, v in (line.removeprefix("export ").partition("=")
                                 for line in path.read_text().splitlines() if line.startswith("export "))}


def _netns_with(prefix_of: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix_of)]


def test_up_prints_working_urls_and_down_cleans_everything(toolchain: object) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="mgp-ls-"))
    log = workdir.parent / f"{workdir.name}.log"
    namespaces_before = set(_netns_with(""))
    with log.open("w") as out:
        up = subprocess.Popen(_cli("up", "--workdir", str(workdir)), stdout=out, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        wait_for(lambda: (workdir / ENV_FILE).exists() or up.poll() is not None, 600, "localstack up to print its env")
        assert up.poll() is None, log.read_text()[-3000:]
        exports = _exports(workdir / ENV_FILE)
        assert {"KUBECONFIG", "TOPO_ETCD", "DATABASE_URL", "PRIMARY_URL"} <= exports.keys()
        assert "export KUBECONFIG=" in log.read_text()
        with psycopg.connect(shlex.split(exports["DATABASE_URL"])[0], connect_timeout=5, autocommit=True) as conn:
            conn.execute("CREATE TABLE via_gateway (x int)")
            conn.execute("INSERT INTO via_gateway VALUES (42)")
        with psycopg.connect(shlex.split(exports["PRIMARY_URL"])[0], connect_timeout=5) as conn:
            assert conn.execute("SELECT x FROM via_gateway").fetchall() == [(42,)]
            assert conn.execute("SELECT count(*) FROM pg_stat_replication WHERE sync_state IN "
                                "('sync', 'quorum')").fetchone() == (2,)
        # docs/playground.md lists the topology with etcdctl (make setup installs it):
        topo_keys = subprocess.run(["etcdctl", "--endpoints", exports["TOPO_ETCD"], "get", "--prefix", "/multigres",
                               "--keys-only"], capture_output=True, text=True, timeout=30)
        assert topo_keys.returncode == 0 and "/multigres/global/databases/postgres" in topo_keys.stdout, topo_keys
        ours = set(_netns_with("")) - namespaces_before  # the pods' network namespaces
        assert len(ours) >= 5, ours  # three pool pods, multiorch, multigateway
        again = subprocess.run(_cli("up", "--workdir", str(workdir)), capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and "already up" in again.stderr

        down = subprocess.run(_cli("down", "--workdir", str(workdir)), capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stderr
        assert up.wait(60) == 0
        assert "stopped; nothing left running" in log.read_text()
        assert not workdir.exists(), "the work directory (pid file, env file, volumes, logs) is removed"
        assert not ours & set(_netns_with(""))
        user_processes = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True).stdout
        assert user_processes.strip() == ""
        nothing = subprocess.run(_cli("down", "--workdir", str(workdir)), capture_output=True, text=True, timeout=60)
        assert nothing.returncode == 1 and "nothing is up" in nothing.stderr
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGTERM)
            try:
                up.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
        log.unlink(missing_ok=True)
