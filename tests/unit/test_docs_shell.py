"""Every shell block of docs/playground.md and docs/cli.md runs as written somewhere in `make test`
(tests/helpers/doc_shell.py says where); the ones that need no stack run here."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers.doc_shell import ALONE, DOCS, PAGES, RUNS_IN, blocks_run_in, run, shell_blocks


def test_every_shell_block_of_the_pages_runs_somewhere() -> None:
    found = {(b.page, b.key): b.where() for page in PAGES for b in shell_blocks(DOCS / page)}
    unrun, stale = found.keys() - RUNS_IN.keys(), RUNS_IN.keys() - found.keys()
    assert not unrun, f"blocks no test runs (add them to doc_shell.RUNS_IN): {[found[k] for k in unrun]}"
    assert not stale, f"doc_shell.RUNS_IN names blocks the pages no longer have: {stale}"


def test_blocks_are_read_by_language_and_keyed_by_their_first_command(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n```yaml\nkind: Pod\n```\n```bash\n# a comment\nmake it  # why\nthen this\n```\n"
                    "```text\n$ not a command\n```\n```zsh\nautoload -Uz compinit\n```\n")
    blocks = shell_blocks(page)
    assert [(b.line, b.shell, b.key) for b in blocks] == [(5, "bash", "make it"), (13, "zsh", "autoload -Uz compinit")]
    assert blocks[0].text == "# a comment\nmake it  # why\nthen this\n"


def test_a_failing_command_fails_the_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```bash\nfalse | cat\necho reached\n```\n")
    (block,) = shell_blocks(page)
    done = run(block, {"PATH": os.environ["PATH"]}, tmp_path)
    assert done.returncode != 0 and "reached" not in done.stdout


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (make setup installs it)")
def test_the_blocks_that_need_no_stack_run_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(home), "ZDOTDIR": str(home),
           "LANG": "C.UTF-8"}
    for block in blocks_run_in(ALONE):
        done = run(block, env, tmp_path, timeout=120)
        assert done.returncode == 0, f"{block.where()} failed:\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stdout + done.stderr, block.where()
    assert "complete" in (home / ".local/share/bash-completion/completions/multigres-pools").read_text()
    assert (home / ".zfunc/_multigres-pools").read_text().startswith("#compdef multigres-pools")
