"""Every binary of the playground toolchain runs as the unprivileged user and is the pinned version:
Multigres v0.1.0, PostgreSQL 17 (ahead of any other PostgreSQL on the machine's PATH), pgBackRest
>= 2.57 and etcd 3, with a working en_US.UTF-8 locale."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from multigres_pools.playground import toolchain as toolchain_module
from multigres_pools.playground.toolchain import (
    MULTIGRES_COMMANDS,
    MULTIGRES_VERSION,
    PGBACKREST_MIN,
    POSTGRES_TOOLS,
    Toolchain,
)

pytestmark = pytest.mark.multigres


def run_as_user(toolchain: Toolchain, argv: list[str], **extra_env: str) -> subprocess.CompletedProcess[str]:
    kwargs = toolchain.process_kwargs()
    kwargs["env"] = {**toolchain.env(), **extra_env}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload]


def test_processes_run_as_the_unprivileged_user(toolchain: Toolchain) -> None:
    assert toolchain.uid != 0
    assert run_as_user(toolchain, ["id", "-u"]).stdout.strip() == str(toolchain.uid)
    via_runuser = subprocess.run(toolchain.as_user(["id", "-un"]), capture_output=True, text=True, check=True)
    assert via_runuser.stdout.strip() == toolchain.user


@pytest.mark.parametrize("command", MULTIGRES_COMMANDS)
def test_multigres_binary_runs(toolchain: Toolchain, command: str) -> None:
    done = run_as_user(toolchain, [command, "--help"])
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    assert shutil.which(command, path=toolchain.env()["PATH"]) == str(toolchain.multigres_bin / command)
    assert MULTIGRES_VERSION in (toolchain.multigres_bin / "VERSION").read_text()


@pytest.mark.parametrize("tool", POSTGRES_TOOLS)
def test_postgres_tool_is_version_17_and_first_on_path(toolchain: Toolchain, tool: str) -> None:
    done = run_as_user(toolchain, [tool, "--version"])
    assert done.returncode == 0, done.stderr
    assert re.search(r"\(PostgreSQL\) 17\.\d+", done.stdout), done.stdout
    # /usr/local/bin may hold another PostgreSQL: ours must win on the processes' PATH.
    found = run_as_user(toolchain, ["sh", "-c", f"command -v {tool}"]).stdout.strip()
    assert found == str(toolchain.postgres_bin / tool)


def test_pgbackrest_is_recent_enough(toolchain: Toolchain) -> None:
    done = run_as_user(toolchain, ["pgbackrest", "version"])
    assert done.returncode == 0, done.stderr
    match = re.fullmatch(r"pgBackRest (\d+)\.(\d+)(?:\.\d+)?", done.stdout.strip())
    assert match, done.stdout
    assert (int(match[1]), int(match[2])) >= PGBACKREST_MIN


def test_etcd_is_major_3(toolchain: Toolchain) -> None:
    done = run_as_user(toolchain, ["etcd", "--version"])
    assert done.returncode == 0, done.stderr
    assert re.search(r"etcd Version: 3\.", done.stdout), done.stdout


def test_initdb_as_the_user_with_the_utf8_locale(toolchain: Toolchain) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="mgp-initdb-"))  # /tmp: the user can reach it
    try:
        os.chown(workdir, toolchain.uid, toolchain.gid)
        data = workdir / "pg_data"
        done = run_as_user(toolchain, ["initdb", "-D", str(data), "-U", "postgres", "--locale=en_US.UTF-8",
                                       "-E", "UTF8", "--no-sync", "--auth=trust"])
        assert done.returncode == 0, done.stdout + done.stderr
        control = run_as_user(toolchain, ["pg_controldata", str(data)])
        assert "pg_control version number" in control.stdout
        assert run_as_user(toolchain, ["locale"]).stderr == ""  # no "Cannot set LC_..." warnings
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_available_returns_the_installed_toolchain_without_building(toolchain: Toolchain) -> None:
    assert toolchain_module.available() == toolchain
