"""postgresConfig values read back by real PostgreSQL 17 exactly as written: the fragment the renderer
makes (spec.postgresConfig -> the postgres-config ConfigMap) is appended to a real postgresql.conf
the way pgctld appends POSTGRES_INITDB_EXTRA_CONF, and `postgres -C` (which parses the file and
prints a setting without starting a server) reports every hostile value unchanged and every setting
the values try to smuggle in untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.render import context as render_context
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from multigres_pools.playground.toolchain import Toolchain
from tests import render_corpus as corpus

pytestmark = pytest.mark.multigres

# Custom (dotted) settings take any string, so PostgreSQL prints them back verbatim.
HOSTILE = {
    "mgtest.quote": "it's",
    "mgtest.trailing_backslash": "a\\",
    "mgtest.escaped_quote": "x\\' ; fsync = 'off",
    "mgtest.fake_escapes": "\\n\\t\\101",
    "mgtest.doubled": "''''",
    "mgtest.comment": "# not a comment = 'x'",
    "mgtest.unicode": "żółw ✓",
    "log_line_prefix": "%m [%p] ' ",
}


def _run(toolchain: Toolchain, argv: list[str]) -> subprocess.CompletedProcess[str]:
    kwargs = toolchain.process_kwargs()
    kwargs["env"] = toolchain.env()
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def data_dir(toolchain: Toolchain) -> Iterator[Path]:
    workdir = Path(tempfile.mkdtemp(prefix="mgp-pgconf-"))
    try:
        os.chown(workdir, toolchain.uid, toolchain.gid)
        data = workdir / "pg_data"
        done = _run(toolchain, ["initdb", "-D", str(data), "-U", "postgres", "--no-sync", "--auth=trust"])
        assert done.returncode == 0, done.stdout + done.stderr
        fragment = render_context.postgres_config_text(model.load_spec(corpus.spec({"postgresConfig": HOSTILE})))
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(f"\n## /etc/pgctld-postgres-config/postgresql.conf\n{fragment}")
        yield data
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _show(toolchain: Toolchain, data: Path, name: str) -> str:
    done = _run(toolchain, ["postgres", "-D", str(data), "-C", name])
    assert done.returncode == 0, done.stderr
    return done.stdout.removesuffix("\n")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_postgres_reads_each_value_exactly_as_written(toolchain: Toolchain, data_dir: Path, name: str) -> None:
    assert _show(toolchain, data_dir, name) == HOSTILE[name]


def test_nothing_is_smuggled_in(toolchain: Toolchain, data_dir: Path) -> None:
    assert _show(toolchain, data_dir, "fsync") == "on"
    assert _show(toolchain, data_dir, "password_encryption") == "scram-sha-256"


def test_the_old_quoting_let_a_backslash_break_out(toolchain: Toolchain, data_dir: Path) -> None:
    """Why backslashes are doubled: quoting only `'` leaves `\\'` an escaped quote, so the value runs
    on and the file no longer parses (PostgreSQL would not start)."""
    conf = data_dir.parent / "old.conf"
    conf.write_text("mgtest.x = 'a\\'\nmgtest.y = 'b'\n")  # the old rendering of the value `a\`
    os.chown(conf, toolchain.uid, toolchain.gid)
    done = _run(toolchain, ["postgres", "-D", str(data_dir), "-C", "mgtest.x", "-c", f"config_file={conf}"])
    assert done.returncode != 0 and "syntax error" in done.stderr, done.stderr
