"""Build the collection tarball and the Python wheel the way a user does, and read what the
collection's plugins import: shared by the packaging tests."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
VENV_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "multigres-pools" / "test-venvs"
# Import name -> the distribution that provides it, where they differ (pydantic pins its own core).
DISTRIBUTIONS = {"yaml": "pyyaml", "pydantic_core": "pydantic"}


def build_collection(out: Path) -> Path:
    """`ansible-galaxy collection build` of this checkout; returns the tarball."""
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out),
                    str(REPO)], check=True, capture_output=True, text=True, timeout=120)
    (tarball,) = out.glob("multigres-pools-*.tar.gz")
    return tarball


def build_wheel(out: Path) -> Path:
    """The multigres-pools wheel (what `pip install .` installs), built without network access."""
    subprocess.run([str(BIN / "pip"), "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(REPO)], check=True, capture_output=True, text=True,
                   timeout=300)
    (wheel,) = out.glob("multigres_pools-*.whl")
    return wheel


def members(tarball: Path) -> set[str]:
    with tarfile.open(tarball) as tar:
        return {m.name.rstrip("/") for m in tar.getmembers()}


def pin(requirements: Path, distribution: str) -> str:
    """`name==version` of one distribution in a requirements file (exact pins only)."""
    for line in requirements.read_text().splitlines():
        if line.split("==")[0].strip().lower() == distribution.lower():
            return line.strip()
    raise AssertionError(f"{requirements} pins no {distribution}")


def third_party_imports(root: Path) -> set[str]:
    """Distribution names of every module imported by the .py files under `root` that is neither
    the standard library, Ansible, nor the collection itself (a relative import)."""
    found: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in {"ansible", "ansible_collections", "__future__"}:
                    found.add(DISTRIBUTIONS.get(top, top))
    return found


def cached_venv(*requirements: str, over: tuple[str, ...] = ()) -> Path:
    """A virtualenv holding exactly `requirements` (pip arguments; `-r` files and local project
    folders by absolute path: a file's contents are part of the key, a folder's path only) and
    what they depend on, nothing of this checkout; then `over`, installed by a second pip run on
    top of those as an image layer does (it may upgrade what the first run installed). Built once
    per machine and reused: keyed by the Python version, the arguments and the contents of the
    files they name; a lock file keeps two sessions from building it at once, a marker tells a
    finished one from an interrupted one."""
    key = hashlib.sha256(sys.version.encode())
    for arg in (*requirements, *(("--over", *over) if over else ())):
        key.update(arg.encode() + (Path(arg).read_bytes() if Path(arg).is_file() else b""))
    venv = VENV_CACHE / key.hexdigest()[:16]
    VENV_CACHE.mkdir(parents=True, exist_ok=True)
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
            # This venv's pip installs into the new one (faster than bootstrapping pip there);
            # the pip cache makes it quick, and PyPI is reachable from our machines.
            for layer in (requirements, over):
                if layer:
                    subprocess.run([str(BIN / "pip"), "--python", str(venv / "bin" / "python"), "install", "-q",
                                    "--disable-pip-version-check", *layer], check=True, timeout=900)
            (venv / ".complete").touch()
    return venv
