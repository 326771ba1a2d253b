"""The last word of every command: Ctrl-C is 130 and one line, a bug is 3 and one line naming the file that
keeps its traceback; the agent and the operator keep a bug's traceback in their log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from multigres_pools import cli_guard


def _interrupted() -> int:
    raise KeyboardInterrupt


def _bug() -> int:
    raise KeyError("missing")


def test_ctrl_c_is_130_and_one_line(capsys) -> None:
    assert cli_guard.run(_interrupted, "multigres-pools") == 130
    assert capsys.readouterr().err.strip() == "multigres-pools: interrupted"


def test_a_bug_is_3_and_one_line_naming_the_saved_traceback(capsys) -> None:
    assert cli_guard.run(_bug, "multigres-pools") == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    found = re.search(r"internal error \(a bug\): KeyError: 'missing'; please report it with the traceback saved in "
                      r"(\S+)$", err.strip())
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert saved.read_text().startswith("Traceback (most recent call last):")
        assert "in _bug" in saved.read_text()
    finally:
        saved.unlink()


def test_daemons_keep_the_traceback_of_a_bug() -> None:
    with pytest.raises(KeyError):
        cli_guard.run(_bug, "multigres-pools", keep_tracebacks=True)
    assert cli_guard.run(lambda: 0, "multigres-pools", keep_tracebacks=True) == 0
