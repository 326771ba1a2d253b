"""The write-load tool the data-safety tests rely on, against a real PostgreSQL 17: it counts only
acknowledged writes, survives the server going away, and `missing()` really finds lost rows."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from multigres_pools.playground.cluster import free_port
from multigres_pools.playground.toolchain import Toolchain
from multigres_pools.playground.writeload import WriteLoad

pytestmark = pytest.mark.multigres


class Postgres:
    def __init__(self, toolchain: Toolchain, root: Path) -> None:
        self.toolchain, self.data, self.port = toolchain, root / "data", free_port()
        self.sockets = root / "s"

    def run(self, *argv: str) -> None:
        subprocess.run([str(self.toolchain.postgres_bin / argv[0]), *argv[1:]], check=True, timeout=120,
                       capture_output=True, **self.toolchain.process_kwargs())  # type: ignore[call-overload]

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.data.parent / "pg.log"), "-o",
                 f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def dsn(self, host: str) -> str:
        return f"host={host} port={self.port} user=postgres dbname=postgres"


@pytest.fixture
def postgres(toolchain: Toolchain) -> Iterator[Postgres]:
    root = Path(tempfile.mkdtemp(prefix="mgp-pg-"))
    os.chown(root, toolchain.uid, toolchain.gid)
    pg = Postgres(toolchain, root)
    pg.sockets.mkdir()
    os.chown(pg.sockets, toolchain.uid, toolchain.gid)
    pg.run("initdb", "-D", str(pg.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    pg.start()
    try:
        yield pg
    finally:
        subprocess.run(["pkill", "-KILL", "-f", str(pg.data)], check=False)
        shutil.rmtree(root, ignore_errors=True)


def test_counts_acknowledged_writes_across_a_restart_and_finds_lost_rows(postgres: Postgres) -> None:
    load = WriteLoad(find_primary=lambda: "127.0.0.1", dsn=postgres.dsn, interval=0.005)
    load.start()
    try:
        load.wait_for_acks(50, timeout=60)
        postgres.stop(mode="immediate")  # in-flight commits fail; none of them may count
        postgres.start()
        load.wait_for_acks(50, timeout=60)
    finally:
        load.stop()
    assert load.errors, "the restart must have been noticed"
    assert load.missing() == []
    assert load.acked == sorted(load.acked) and len(set(load.acked)) == len(load.acked)
    assert load.longest_outage().seconds > 0

    # The check is real: rows that vanish after their commit was acknowledged are reported.
    lost = load.acked[3:6]
    with psycopg.connect(postgres.dsn("127.0.0.1"), autocommit=True) as conn:
        conn.execute(f"DELETE FROM {load.table} WHERE id = ANY(%s)", (lost,))
    assert load.missing() == lost
