"""tests/sanity/ignore-2.19.txt stays honest: every entry names a file that exists and says why it is
ignored (ansible-test itself only rejects entries for files it no longer finds when it runs)."""

from __future__ import annotations

import re

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


def test_ansible_lint_config_is_offline_at_profile_production():
    config = yaml.safe_load((REPO / ".ansible-lint").read_text())
    assert config["profile"] == "production" and config["offline"] is True
    assert not config.get("skip_list") and not config.get("warn_list")
