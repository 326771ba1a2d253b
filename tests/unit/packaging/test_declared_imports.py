"""Every third-party package the shipped code imports is declared where its users install from:
the Python package's in pyproject.toml, the collection's in meta/requirements.txt (execution
environments get only that file), the playground's in the `playground` extra. A package that only
arrives as someone else's dependency (aiohttp once came with kopf) breaks the day that one drops it."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# Developer tools inside the package, run by hand from a development checkout (requirements.txt).
DEV_TOOLS = {REPO / "src/multigres_pools/proto/generate.py"}
OURS = {"multigres_pools", "ansible_collections", "__future__"}
# pydantic pins pydantic-core to one exact version, and PydanticCustomError is only importable from
# pydantic-core: declaring pydantic declares it.
PINNED_BY = {"pydantic-core": "pydantic"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _imports(files: list[Path]) -> dict[str, set[str]]:
    """distribution -> files importing it (absolute imports of non-standard, non-project modules)."""
    owners = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in OURS:
                    continue
                for dist in owners.get(top, [top]):
                    found.setdefault(_name(dist), set()).add(str(path))
    return found


def _python_files(root: str, *, exclude: str | None = None) -> list[Path]:
    files = [p for p in (REPO / root).rglob("*.py") if "/proto/gen/" not in str(p) and p not in DEV_TOOLS]
    return [p for p in files if exclude is None or exclude not in p.parts]


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
PACKAGE = {_name(r) for r in PROJECT["dependencies"]}
PLAYGROUND = {_name(r) for r in PROJECT["optional-dependencies"]["playground"]}
COLLECTION = {_name(line) for line in (REPO / "meta/requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")} | {"ansible-core"}


def _undeclared(found: dict[str, set[str]], declared: set[str]) -> dict[str, set[str]]:
    return {dist: files for dist, files in found.items()
            if dist not in declared and PINNED_BY.get(dist) not in declared}


def test_the_collection_declares_what_its_plugins_import() -> None:
    assert _undeclared(_imports(_python_files("plugins")), COLLECTION) == {}


def test_the_package_declares_what_its_runtime_imports() -> None:
    # The package imports the engine, so the collection's requirements are its own too.
    runtime = _imports(_python_files("src/multigres_pools", exclude="playground"))
    assert _undeclared(runtime, PACKAGE) == {}


def test_the_playground_extra_declares_what_the_playground_imports() -> None:
    playground = _imports(_python_files("src/multigres_pools/playground"))
    assert _undeclared(playground, PACKAGE | PLAYGROUND) == {}


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    # A probe beside the sources, not inside them: the other tests of this file may run meanwhile
    # (make test runs them on several workers).
    stray = tmp_path / "stray_import_probe.py"
    stray.write_text("import psycopg\n")
    runtime = _imports([*_python_files("src/multigres_pools", exclude="playground"), stray])
    assert set(_undeclared(runtime, PACKAGE)) == {"psycopg"}
