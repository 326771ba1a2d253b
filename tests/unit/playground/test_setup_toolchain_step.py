"""tools/setup.sh installs the Multigres toolchain unless SKIP_TEST_BINARIES or SKIP_MULTIGRES is set,
and the command it runs is the toolchain's real CLI. setup.sh itself runs here, in a scratch copy of
the repository whose .venv python is a recorder (so nothing is installed or built)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RECORDER = """#!/bin/bash
echo "$*" >> "$SETUP_TEST_LOG"
[ "$1" = "-c" ] && echo "$SETUP_TEST_SITE"
exit 0
"""


def _scratch_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "meta").mkdir()
    for name in ("tools/setup.sh", "requirements.txt", "meta/requirements.txt", "pyproject.toml"):
        shutil.copy(REPO / name, repo / name)
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(RECORDER)
    python.chmod(0o755)
    # The venv is "up to date" and kubernetes.core "unpacked", so setup goes straight to the build steps.
    digest = subprocess.run("sha256sum requirements.txt meta/requirements.txt pyproject.toml | sha256sum | cut -c1-16",
                            shell=True, cwd=repo, capture_output=True, text=True, check=True).stdout
    (repo / ".venv" / ".requirements.sha").write_text(digest)
    manifest = repo / ".venv/collections/ansible_collections/kubernetes/core/MANIFEST.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{}")
    (root / "site").mkdir()
    # go/openssl/lua5.4 present, and apt-get must not be reached.
    stubs = root / "stubs"
    stubs.mkdir()
    for tool, body in {"go": "exit 0", "openssl": "exit 0", "lua5.4": "exit 0",
                       "apt-get": "echo apt-get must not run >&2; exit 99"}.items():
        (stubs / tool).write_text(f"#!/bin/sh\n{body}\n")
        (stubs / tool).chmod(0o755)
    return repo


def _run_setup(tmp_path: Path, **env: str) -> list[str]:
    repo = _scratch_repo(tmp_path)
    log = tmp_path / "calls.log"
    log.touch()
    base = {k: v for k, v in os.environ.items() if k not in {"SKIP_TEST_BINARIES", "SKIP_MULTIGRES"}}
    base.update(PATH=f"{tmp_path / 'stubs'}:{os.environ['PATH']}", SETUP_TEST_LOG=str(log),
                SETUP_TEST_SITE=str(tmp_path / "site"), **env)
    done = subprocess.run(["bash", str(repo / "tools/setup.sh")], env=base, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [line for line in log.read_text().splitlines() if line.startswith("-m ")]


def test_setup_script_parses() -> None:
    subprocess.run(["bash", "-n", str(REPO / "tools/setup.sh")], check=True)


def test_setup_runs_the_toolchain_ensure_step_whose_cli_is_real(tmp_path: Path) -> None:
    calls = _run_setup(tmp_path)
    assert calls == ["-m multigres_pools.playground.binaries --ensure",
                     "-m multigres_pools.playground.node_binaries --ensure",
                     "-m multigres_pools.playground.ansible_operator --ensure",
                     "-m multigres_pools.playground.flux --ensure",
                     "-m multigres_pools.playground.argocd --ensure",
                     "-m multigres_pools.playground.s3server --ensure",
                     "-m multigres_pools.playground.toolchain --ensure"]
    # The recorded invocations are the real CLIs: the same modules answer --help.
    for call in calls[1:]:
        helped = subprocess.run([sys.executable, "-m", call.split()[1], "--help"], capture_output=True, text=True,
                                check=True)
        assert "--ensure" in helped.stdout


@pytest.mark.parametrize(("env", "expected"), [
    ({"SKIP_MULTIGRES": "1"}, ["-m multigres_pools.playground.binaries --ensure",
                               "-m multigres_pools.playground.node_binaries --ensure",
                               "-m multigres_pools.playground.ansible_operator --ensure",
                               "-m multigres_pools.playground.flux --ensure",
                               "-m multigres_pools.playground.argocd --ensure",
                               "-m multigres_pools.playground.s3server --ensure"]),
    ({"SKIP_TEST_BINARIES": "1"}, []),
])
def test_setup_skips(tmp_path: Path, env: dict[str, str], expected: list[str]) -> None:
    assert _run_setup(tmp_path, **env) == expected
