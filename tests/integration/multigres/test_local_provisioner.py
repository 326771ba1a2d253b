"""Smoke test of the real thing: Multigres v0.1.0's local provisioner, run as the unprivileged
user on free ports, elects a primary with two synchronous standbys, and `cluster stop` leaves no
process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from multigres_pools.playground.local_provisioner import LocalProvisionerCluster
from multigres_pools.playground.toolchain import Toolchain
from tests.helpers.polling import eventually

pytestmark = pytest.mark.multigres


def psql(cluster: LocalProvisionerCluster, port: int, sql: str) -> str | None:
    """One query as the toolchain user over TCP; None while the server does not answer."""
    pgctld = next(iter(cluster.config["provisioner-config"]["cells"].values()))["pgctld"]
    kwargs = cluster.toolchain.process_kwargs()
    kwargs["env"] = {**cluster.toolchain.env(), "PGPASSWORD": pgctld["pg-password"], "PGCONNECT_TIMEOUT": "3"}
    done = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", pgctld["pg-user"], "-d", "postgres",
                           "-XAtc", sql], capture_output=True, text=True, timeout=30, **kwargs)  # type: ignore[call-overload]
    return done.stdout.strip() if done.returncode == 0 else None


def test_local_provisioner_runs_a_primary_with_two_sync_standbys(toolchain: Toolchain) -> None:
    # A short path under /tmp: reachable by the user, and postgres' socket path must fit in 108 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="mgp-lp-"))
    os.chown(workdir, toolchain.uid, toolchain.gid)
    cluster = LocalProvisionerCluster(toolchain, workdir)
    try:
        cluster.init()
        cluster.start()
        # etcd, multiadmin, and per cell pgctld, postgres, multipooler, multiorch, multigateway.
        assert len(cluster.processes()) >= 2 + 3 * 5
        ports = cluster.postgres_ports()
        assert len(ports) == 3

        def primary() -> int | None:
            found = [port for port in ports.values() if psql(cluster, port, "SELECT pg_is_in_recovery()") == "f"]
            return found[0] if len(found) == 1 else None

        port = eventually(primary, timeout=120, what="exactly one primary accepting SQL")
        eventually(lambda: psql(cluster, port, "SHOW synchronous_standby_names"), timeout=120,
                   what="a non-empty synchronous_standby_names on the primary")
        eventually(lambda: psql(cluster, port, "SELECT count(*) FROM pg_stat_replication") == "2", timeout=120,
                   what="two standbys in pg_stat_replication")
        standbys = [p for p in ports.values() if p != port]
        assert all(psql(cluster, p, "SELECT pg_is_in_recovery()") == "t" for p in standbys)
    finally:
        leftovers = cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    assert leftovers == [], f"processes left after `multigres cluster stop`: {leftovers}"
