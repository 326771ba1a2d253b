"""The CLI as a user meets it: `--version`, help on every option with its default, an examples epilog
per command, and completion scripts that bash (and zsh, where installed) load and answer with."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from multigres_pools import completion
from multigres_pools.version import version
from tests.helpers.cli import run as run_cli

COMMANDS = ["render", "install-bundle", "completion", "agent", "operator", "localstack", "localstack up",
            "localstack down", "status", "switchover"]


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = run_cli(*args)  # in this process; the version test below starts the program itself
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_version_prints_the_installed_package_version():
    out = subprocess.run([sys.executable, "-m", "multigres_pools.cli", "--version"], capture_output=True, text=True,
                         timeout=120, check=True).stdout.strip()
    assert out == f"multigres-pools {version()}"
    assert version() != "0+unknown"  # the test venv installs the package


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_of_every_command_has_examples_and_shows_defaults(command):
    out = _cli(*command.split(), "--help").stdout
    assert "\nexamples:\n  " in out, out
    examples = out.split("\nexamples:\n", 1)[1]
    assert all(line.startswith("  ") for line in examples.splitlines() if line)
    assert "multigres-pools" in examples or "kubectl" in examples


def test_defaults_are_shown_and_flags_carry_none():
    render = _cli("render", "--help").stdout
    assert "(default: default)" in render and "(default: all)" in render
    operator = _cli("operator", "--help").stdout
    assert "(default: 127.0.0.1:8080)" in " ".join(operator.split())
    assert "(default: True)" not in operator and "(default: False)" not in operator  # store_false/true flags
    assert "(default: None)" not in operator + render


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from multigres_pools import cli

    found = {}
    for action in cli.parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    for name, module in cli.DELEGATES.items():
        found[name] = __import__(module, fromlist=["parser"]).parser()
    return found


def test_every_option_of_every_command_has_help_text():
    missing = []
    parsers = list(_parsers().items())
    while parsers:
        name, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
            elif not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_completion_needs_a_known_shell():
    done = _cli("completion", "fish", check=False)
    assert done.returncode == 2 and "invalid choice: 'fish'" in done.stderr


def _bash_complete(script: Path, words: list[str], cwd: Path) -> list[str]:
    """What bash offers after `words` (the last one is being typed), through the generated function."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"source {script}\nCOMP_WORDS=({quoted})\nCOMP_CWORD={len(words) - 1}\n"
               "_multigres_pools\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                          cwd=cwd, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completion_completes_commands_options_choices_and_paths(tmp_path):
    script = tmp_path / "multigres-pools.bash"
    script.write_text(_cli("completion", "bash").stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    (tmp_path / "shard.yaml").write_text("")
    (tmp_path / "shards").mkdir()
    prog = "multigres-pools"
    assert _bash_complete(script, [prog, "ren"], tmp_path) == ["render"]
    assert set(_bash_complete(script, [prog, ""], tmp_path)) >= {"render", "install-bundle", "completion", "agent",
                                                                "operator", "localstack", "status", "--version"}
    assert _bash_complete(script, [prog, "completion", ""], tmp_path)[:2] == ["bash", "zsh"]
    assert set(_bash_complete(script, [prog, "localstack", ""], tmp_path)) >= {"up", "down"}
    assert "--replicas" in _bash_complete(script, [prog, "localstack", "up", "--"], tmp_path)
    assert _bash_complete(script, [prog, "render", "--only", ""], tmp_path) == ["all", "crs", "preview"]
    assert _bash_complete(script, [prog, "status", "orders", "-o", "j"], tmp_path) == ["json"]
    assert _bash_complete(script, [prog, "render", "-f", "sh"], tmp_path) == ["shard.yaml", "shards"]
    assert _bash_complete(script, [prog, "render", "-d", "sh"], tmp_path) == ["shards"]
    assert _bash_complete(script, [prog, "render", "-f", "x.yaml", "--pre"], tmp_path) == ["--previous"]
    assert "--stall-after" in _bash_complete(script, [prog, "agent", "--st"], tmp_path)
    assert _bash_complete(script, [prog, "operator", "--log-format", ""], tmp_path) == ["json", "text"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_offers_the_same_words(tmp_path):
    script = tmp_path / "_multigres-pools"
    script.write_text(_cli("completion", "zsh").stdout)
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True).returncode == 0
    # compsys is interactive; stand-ins for its builtins print what the function hands them.
    stubs = ("compdef() { :; }\n_describe() { print -rl -- ${(P)${@[-1]}} }\ncompadd() { shift; print -rl -- $@ }\n"
             "_files() { print -r -- FILES $@ }\n_message() { print -r -- MESSAGE }\n")

    def offer(*words: str) -> list[str]:
        words_ = " ".join(f"'{w}'" for w in words)
        program = f"{stubs}source {script}\nwords=({words_})\nCURRENT={len(words)}\n_multigres_pools\n"
        done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    top = offer("multigres-pools", "")
    assert "render:validate MultigresShards and write CRs plus a preview of their objects" in top
    assert any(line.startswith("--version:") for line in top)
    assert offer("multigres-pools", "render", "--only", "") == ["all", "crs", "preview"]
    assert offer("multigres-pools", "render", "-d", "") == ["FILES -/"]
    assert offer("multigres-pools", "status", "x", "--kubeconfig", "") == ["FILES"]
    assert offer("multigres-pools", "localstack", "") [:2] == ["up:start the stack and a sample shard; stay up until "
                                                              "down or Ctrl-C", "down:stop a stack started by `up`"]
    assert "--replicas:replicas of the sample shard" in offer("multigres-pools", "localstack", "up", "")
    assert offer("multigres-pools", "completion", "")[:2] == ["bash", "zsh"]


def test_completion_tree_covers_every_command():
    root = completion.tree()
    assert set(root.commands) == {c for c in COMMANDS if " " not in c}
    assert set(root.commands["localstack"].commands) == {"up", "down"}
    kinds = {flag: opt.value for opt in root.commands["render"].options for flag in opt.flags}
    assert (kinds["-f"], kinds["-d"], kinds["-o"], kinds["--only"], kinds["--stdout"]) == (
        "file", "dir", "dir", "choice", "")
