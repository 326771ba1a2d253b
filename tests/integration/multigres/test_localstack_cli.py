"""`multigres-pools localstack up` as a user runs it: it prints what to export, the printed URLs
answer SQL (through the multigateway and at the primary), `localstack down` from elsewhere stops it,
and nothing it started is left behind."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.localstack_cli import ENV_FILE
from tests.helpers import doc_shell

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "multigres_pools.cli", "localstack", *args]


def _exports(path: Path) -> dict[str, str]:
    return {k: v for k, _, v in (line.removeprefix("export ").partition("=")
                                 for line in path.read_text().splitlines() if line.startswith("export "))}


def _netns_with(prefix_of: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix_of)]


SWITCHOVER = "multigres-pools switchover"


def _run_the_docs_blocks(workdir: Path) -> None:
    """docs/cli.md's status commands, docs/playground.md's tour (its scale-down last), then cli.md's
    switchover, as written:
    in a shell that has only the env file, a HOME whose kubeconfig has the `prod` context the docs
    name, and the --watch redraw ended by Ctrl-C after a few seconds."""
    home = workdir.parent / f"{workdir.name}-home"
    (home / ".kube").mkdir(parents=True)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8"}
    try:
        kubeconfig = home / ".kube" / "config"
        shutil.copy(_exports(workdir / ENV_FILE)["KUBECONFIG"], kubeconfig)
        renamed = doc_shell.run(doc_shell.Block("setup", 0, "bash", f"source {workdir / ENV_FILE}\n"
                                                "kubectl config rename-context \"$(kubectl config current-context "
                                                f"--kubeconfig {kubeconfig})\" prod --kubeconfig {kubeconfig}\n"),
                                env, home)
        assert renamed.returncode == 0, renamed.stderr
        healthy = doc_shell.Block("setup", 0, "bash", "multigres-pools status play -n play -o json | "
                                                      "jq -e '.state == \"Healthy\"'\n")
        wait_for(lambda: doc_shell.run(healthy, env, home).returncode == 0, 300, "status to say Healthy")
        three = doc_shell.Block("setup", 0, "bash", f"source {workdir / ENV_FILE}\n"
                                                    "kubectl patch mgs play -n play --type merge -p "
                                                    "'{\"spec\":{\"pools\":{\"default\":{\"replicasPerCell\":3}}}}'\n")
        serving_3 = doc_shell.Block("setup", 0, "bash", "multigres-pools status play -n play -o json | "
                                                        "jq -e '.state == \"Healthy\" and (.pods | length) == 3'\n")
        watch = "multigres-pools status play -n play --watch "
        replace = {doc_shell.DEFAULT_WORKDIR: str(workdir), watch: f"timeout --preserve-status -s INT 5 {watch}"}
        # cli.md's status blocks first: they want a Healthy shard, and playground.md's tour ends in a
        # scale-down to 2. The switchover last, on 3 pods again: it moves the primary away from the pod
        # the tour's $PRIMARY_URL names, and with AT_LEAST_2 a primary of 2 pods has no standby it may
        # hand over to (the agent refuses, docs/operations.md "Move the primary").
        def order(block: doc_shell.Block) -> tuple[bool, bool]:
            return block.key.startswith(SWITCHOVER), block.page != "cli.md"

        for block in sorted(doc_shell.blocks_run_in(doc_shell.ON_LOCALSTACK), key=order):
            if block.key.startswith(SWITCHOVER):
                assert doc_shell.run(three, env, home).returncode == 0
                wait_for(lambda: doc_shell.run(serving_3, env, home).returncode == 0, 300, "3 pods and Healthy")
            done = doc_shell.run(block, env, home, replace=replace)
            assert done.returncode == 0, f"{block.where()} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            assert "Traceback" not in done.stdout + done.stderr, block.where()
    finally:
        shutil.rmtree(home, ignore_errors=True)


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
        _run_the_docs_blocks(workdir)
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
