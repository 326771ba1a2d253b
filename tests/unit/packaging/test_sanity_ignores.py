"""tests/sanity/ignore-2.19.txt stays honest: every entry names a file that exists and says why it is
ignored (ansible-test itself only rejects entries for files it no longer finds when it runs)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import yaml

from tests.helpers.collection import REPO

IGNORES = REPO / "tests" / "sanity" / "ignore-2.19.txt"
# <path> <test>[-<python>|:<code>]  # <reason>
ENTRY = re.compile(r"^(?P<path>\S+) (?P<test>[a-z0-9.-]+(?::[a-z0-9-]+)?)  # (?P<reason>\S.{20,})$")


def test_every_ignore_entry_names_an_existing_file_and_a_reason():
    lines = IGNORES.read_text().splitlines()
    assert lines
    for line in lines:
        match = ENTRY.match(line)
        assert match, f"{IGNORES.name}: {line!r} is not '<path> <test>  # <reason>'"
        assert (REPO / match["path"]).is_file(), f"{IGNORES.name}: {match['path']} does not exist"


def test_import_ignores_are_only_for_module_utils_the_modules_guard():
    """Modules and plugins import their third-party libraries behind module_utils/deps.py, so the import
    test must pass for them without an ignore entry."""
    paths = [line.split()[0] for line in IGNORES.read_text().splitlines() if " import-" in line]
    assert paths and all(p.startswith("plugins/module_utils/") for p in paths)


# Imports each module_utils file alone, with the collection's runtime requirements made unimportable:
# what ansible-test's import check does in its bare venv. One interpreter forks a child per file, so
# every file is imported into a process that has imported no other engine file (an interpreter per
# file did the same at three times the CPU).
_IMPORT_EACH_ALONE = """
import builtins, importlib, json, os, sys
blocked = {"pydantic", "pydantic_core", "yaml", "_yaml", "cryptography"}
real = builtins.__import__
def guarded(name, *args, **kwargs):
    if name.partition(".")[0] in blocked:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return real(name, *args, **kwargs)
builtins.__import__ = guarded
failing = []
for stem in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module("ansible_collections.multigres.pools.plugins.module_utils." + stem)
        except BaseException:
            os._exit(1)
        os._exit(0)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        failing.append(stem)
print(json.dumps(failing))
"""


def _failing_without_requirements(stems: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _IMPORT_EACH_ALONE, *stems], capture_output=True, text=True,
                          timeout=120, check=True)
    return set(json.loads(done.stdout))


def test_import_ignores_are_exactly_the_files_that_need_their_requirements_at_import():
    """Every other engine file imports without pydantic, PyYAML and cryptography (requirements_guard.py),
    and every ignored one really needs them: the ignore list can neither grow silently nor go stale."""
    module_utils = REPO / "plugins" / "module_utils"
    ignored = {line.split()[0].removeprefix("plugins/module_utils/")[:-3].replace("/", ".")
               for line in IGNORES.read_text().splitlines() if " import-" in line}
    names = sorted(".".join(p.relative_to(module_utils).with_suffix("").parts)
                   for p in module_utils.rglob("*.py") if p.stem != "__init__")
    assert len(names) > 40
    assert _failing_without_requirements(names) == ignored


def test_the_import_check_sees_a_file_that_needs_a_requirement():
    """The check can fail: a stem whose import needs PyYAML is reported, one that needs nothing is not."""
    assert _failing_without_requirements(["spec.model", "core.keys"]) == {"spec.model"}


def test_ansible_lint_config_is_offline_at_profile_production():
    config = yaml.safe_load((REPO / ".ansible-lint").read_text())
    assert config["profile"] == "production" and config["offline"] is True
    assert not config.get("skip_list") and not config.get("warn_list")
