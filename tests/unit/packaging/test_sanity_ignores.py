"""tests/sanity/ignore-2.19.txt stays honest: every entry names a file that exists and says why it is
ignored (ansible-test itself only rejects entries for files it no longer finds when it runs)."""

from __future__ import annotations

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


# Imports each module_utils file alone, in a fresh interpreter per file, with the collection's runtime
# requirements made unimportable: what ansible-test's import check does in its bare venv.
_IMPORT_ALONE = """
import builtins, importlib, sys
blocked = {"pydantic", "pydantic_core", "yaml", "_yaml", "cryptography"}
real = builtins.__import__
def guarded(name, *args, **kwargs):
    if name.partition(".")[0] in blocked:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return real(name, *args, **kwargs)
builtins.__import__ = guarded
importlib.import_module("ansible_collections.multigres.pools.plugins.module_utils." + sys.argv[1])
"""


def _imports_without_requirements(stem: str) -> bool:
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALONE, stem], capture_output=True, text=True, timeout=60)
    return done.returncode == 0


def test_import_ignores_are_exactly_the_files_that_need_their_requirements_at_import():
    """Every other engine file imports without pydantic, PyYAML and cryptography (requirements_guard.py),
    and every ignored one really needs them: the ignore list can neither grow silently nor go stale."""
    module_utils = REPO / "plugins" / "module_utils"
    ignored = {line.split()[0].removeprefix("plugins/module_utils/")[:-3].replace("/", ".")
               for line in IGNORES.read_text().splitlines() if " import-" in line}
    names = sorted(".".join(p.relative_to(module_utils).with_suffix("").parts)
                   for p in module_utils.rglob("*.py") if p.stem != "__init__")
    failing = {name for name in names if not _imports_without_requirements(name)}
    assert failing == ignored


def test_ansible_lint_config_is_offline_at_profile_production():
    config = yaml.safe_load((REPO / ".ansible-lint").read_text())
    assert config["profile"] == "production" and config["offline"] is True
    assert not config.get("skip_list") and not config.get("warn_list")
