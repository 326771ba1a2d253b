"""The collection as `ansible-galaxy collection build` makes it: no development files, the runtime
requirements declared where ansible-builder looks, metadata complete; and the declarations match
what the plugins import."""

from __future__ import annotations

import ast
import json
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.helpers.collection import REPO, build_collection, members, third_party_imports

DEV_ONLY = ("Makefile", "pyproject.toml", "requirements.txt", "ansible.cfg", ".gitignore", ".ci", ".venv",
            "tools", "tests", "bench", "molecule", "src", "build", "dist", "out", "changelogs/.plugin-cache.yaml")
# The one part of tests/ a collection ships: ansible-test reads its ignore file from the installed copy.
SANITY = "tests/sanity/"


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    return build_collection(tmp_path_factory.mktemp("collection"))


def _read(tarball: Path, name: str) -> str:
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(name)
        assert member is not None, name
        return member.read().decode()


def _development_only(name: str) -> bool:
    if name.startswith(SANITY) or SANITY.startswith(name + "/"):  # tests/sanity and the folders above it
        return False
    return (name.split("/")[0] in DEV_ONLY or name in DEV_ONLY
            or "__pycache__" in name or name.endswith((".pyc", ".egg-info")))


def test_the_tarball_holds_no_development_file(tarball):  # type: ignore[no-untyped-def]
    names = members(tarball)
    leaked = sorted(n for n in names if _development_only(n))
    assert leaked == []
    assert {"LICENSE", "README.md", "meta/runtime.yml", "meta/execution-environment.yml", "meta/requirements.txt",
            "meta/bindep.txt", "changelogs/config.yaml", "plugins/modules/shard_render.py",
            "plugins/modules/shard_reconcile.py", "plugins/action/shard_reconcile.py", "roles/shard/tasks/main.yml",
            "playbooks/reconcile.yml", "manifests/kustomization.yaml", "changelogs/changelog.yaml",
            f"{SANITY}ignore-2.19.txt"} <= names


def test_manifest_names_license_and_every_url(tarball):  # type: ignore[no-untyped-def]
    info = json.loads(_read(tarball, "MANIFEST.json"))["collection_info"]
    assert info["license"] == ["Apache-2.0"]
    for key in ("repository", "documentation", "homepage", "issues"):
        assert info[key].startswith("https://"), key
    assert "Apache License" in _read(tarball, "LICENSE") and "Version 2.0" in _read(tarball, "LICENSE")


def test_execution_environment_points_at_shipped_runtime_files(tarball):  # type: ignore[no-untyped-def]
    ee = yaml.safe_load(_read(tarball, "meta/execution-environment.yml"))
    assert ee["version"] == 1
    assert set(ee["dependencies"]) == {"python", "system"}
    assert set(ee["dependencies"].values()) <= members(tarball)


def test_runtime_requirements_are_exactly_what_the_plugins_import():
    requirements = REPO / "meta" / "requirements.txt"
    pinned = {line.split("==")[0].lower() for line in requirements.read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert all("==" in line for line in requirements.read_text().splitlines() if line and not line.startswith("#"))
    assert pinned == third_party_imports(REPO / "plugins")
    # The development pins take them from there rather than repeating them.
    assert "-r meta/requirements.txt" in (REPO / "requirements.txt").read_text().splitlines()


@pytest.mark.parametrize("module", sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py")))
def test_every_module_documents_its_requirements(module):  # type: ignore[no-untyped-def]
    tree = ast.parse((REPO / "plugins" / "modules" / f"{module}.py").read_text())
    doc = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
               and getattr(node.targets[0], "id", "") == "DOCUMENTATION")
    requirements = yaml.safe_load(doc)["requirements"]
    assert any(r.startswith("python >= 3.11") for r in requirements)
    plugins = [REPO / "plugins" / kind / f"{module}.py" for kind in ("modules", "action")]
    if any(p.is_file() and "module_utils import deps" in p.read_text() for p in plugins):  # the engine's users
        assert any(r.startswith("pydantic") for r in requirements)


def test_the_wheel_lists_every_package_of_the_source_and_the_collection():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    src = REPO / "src"
    expected = {".".join(p.parent.relative_to(src).parts) for p in src.rglob("__init__.py")}
    expected |= {"ansible_collections.multigres.pools"} | {
        f"ansible_collections.multigres.pools.plugins.{p.name}" for p in (REPO / "plugins").iterdir() if p.is_dir()}
    expected |= {"ansible_collections.multigres.pools." + ".".join(p.parent.relative_to(REPO).parts)
                 for p in (REPO / "plugins").rglob("__init__.py")}
    assert set(setuptools["packages"]) == expected


def test_changelog_fragments_use_configured_sections():
    config = yaml.safe_load((REPO / "changelogs" / "config.yaml").read_text())
    sections = {name for name, _ in config["sections"]}
    sections |= {config["prelude_section_name"], config["trivial_section_name"]}
    fragments = sorted((REPO / "changelogs" / "fragments").glob("*.yml"))
    assert fragments
    for fragment in fragments:
        assert set(yaml.safe_load(fragment.read_text())) <= sections, fragment.name
