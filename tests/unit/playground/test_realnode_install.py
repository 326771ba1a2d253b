"""The real node's agent log level knob (realnode/install.py): what the bundle's agent runs with."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from multigres_pools import cli
from multigres_pools.agent import __main__ as agent_main
from multigres_pools.playground.realnode import install


def test_the_variable_names_a_level_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(install.AGENT_LOG_LEVEL_ENV, raising=False)
    assert install.agent_log_level() is None
    monkeypatch.setenv(install.AGENT_LOG_LEVEL_ENV, "debug")
    assert install.agent_log_level() == "DEBUG"
    monkeypatch.setenv(install.AGENT_LOG_LEVEL_ENV, "loud")
    with pytest.raises(ValueError, match=f"{install.AGENT_LOG_LEVEL_ENV}='loud': expected one of DEBUG"):
        install.agent_log_level()


def test_the_bundles_agent_runs_at_that_level(tmp_path: Path) -> None:
    assert cli.main(["install-bundle", "-o", str(tmp_path)]) == 0
    install._set_agent_log_level(tmp_path, "DEBUG")
    install._set_agent_log_level(tmp_path, "WARNING")  # set again: one flag, the last level
    deployment = yaml.safe_load((tmp_path / "agent-deployment.yaml").read_text())
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--log-level")] == ["--log-level=WARNING"]
    assert agent_main.parser().parse_args(args[1:]).log_level == "WARNING"  # args[0] is the subcommand
