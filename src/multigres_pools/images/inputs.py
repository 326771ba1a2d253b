"""What goes into a build context besides the Containerfile: each input has a content key that is
cheap to compute (so a cached image is found without rebuilding anything) and a way to write it."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import io
import json
import shutil
import sys
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from multigres_pools.images.steps import ImageBuildError, digest, run, tree_digest

# What the wheel is made of (pyproject.toml's package-dir and package-data), and what the collection
# tarball adds (galaxy.yml builds the whole checkout but for its build_ignore): a change to any of
# it rebuilds the images that carry it, and nothing else does.
WHEEL_PARTS = ("pyproject.toml", "galaxy.yml", "src/multigres_pools", "plugins", "playbooks", "roles", "meta",
               "manifests")
COLLECTION_PARTS = (*WHEEL_PARTS, "watches.yaml", "changelogs", "docs", "examples", "gitops", "images", "README.md",
                    "LICENSE")


@dataclass(frozen=True)
class Input:
    name: str                           # path inside the context
    key: str                            # content key
    write: Callable[[Path], object]     # writes the input at the given path (what it returns is unused)


def text(name: str, content: str) -> Input:
    return Input(name, digest([content]), lambda path: path.write_text(content))


def file(name: str, source: Path, mode: int | None = None) -> Input:
    def write(path: Path) -> None:
        shutil.copyfile(source, path)
        if mode is not None:
            path.chmod(mode)
    return Input(name, digest([source.read_bytes()]) if source.is_file() else f"missing:{source}", write)


# What building a source folder in place leaves in it (pip builds a local project there, setuptools
# writes build/ and *.egg-info): not source, so neither keyed nor copied. A test that pip-installed the
# Ansible Operator's event plugin from the Go module cache once changed the key of three images.
BUILD_LEFTOVERS = ("__pycache__", "build", "*.egg-info")


def tree(name: str, source: Path) -> Input:
    return Input(name, tree_digest(source, skip=BUILD_LEFTOVERS),
                 lambda path: shutil.copytree(source, path, ignore=shutil.ignore_patterns(*BUILD_LEFTOVERS)))


def source_key(repo: Path, names: tuple[str, ...]) -> str:
    parts: list[str] = []
    for part in names:
        path = repo / part
        parts += [part, tree_digest(path) if path.is_dir() else digest([path.read_bytes()]) if path.exists() else ""]
    return digest(parts)


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def project_wheel(name: str, repo: Path, *tools: str) -> Input:
    """The project's wheel, built from exactly the keyed parts of the checkout, and beside it a wheel
    of each pinned tool in `tools` (the pip that installs it), offline once pip's cache has them.
    Only this changes with our code: the pinned dependencies are `dependency_wheels`."""
    def write(path: Path) -> None:
        path.mkdir(parents=True)
        # From a copy of exactly the keyed parts: an in-tree build leaves build/ in the checkout,
        # and setuptools would carry a module deleted since into the next wheel from it.
        with tempfile.TemporaryDirectory(prefix="wheel-src-") as tmp:
            for part in WHEEL_PARTS:
                source = repo / part
                if source.is_dir():
                    shutil.copytree(source, Path(tmp) / part, ignore=shutil.ignore_patterns("__pycache__"))
                elif source.is_file():
                    shutil.copy2(source, Path(tmp) / part)
            run([*_pip(), "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(path), tmp],
                "build the multigres-pools wheel")
        if tools:
            run([*_pip(), "wheel", "-q", "--no-deps", "--only-binary=:all:", "-w", str(path), *tools],
                f"fetch {' '.join(tools)}")
    return Input(name, digest(["project-wheel", source_key(repo, WHEEL_PARTS), *tools]), write)


def dependency_wheels(name: str, lock: Path) -> Input:
    """A wheel of every pinned runtime dependency in `lock`, as this machine's Python fetches them
    (the images' Python is the same 3.11, so the wheels fit), offline once pip's cache has them.
    Keyed by the lock and the Python alone: a change to our code leaves it as it is."""
    def write(path: Path) -> None:
        path.mkdir(parents=True)
        run([*_pip(), "wheel", "-q", "--no-deps", "--only-binary=:all:", "-w", str(path), "-r", str(lock)],
            f"fetch the wheels pinned in {lock.name}")
    return Input(name, digest(["dependency-wheels", lock.read_bytes(), sys.version]), write)


def collection_tarball(name: str, repo: Path) -> Input:
    """`ansible-galaxy collection build` of the checkout, as the Ansible Operator image installs it."""
    def write(path: Path) -> None:
        out = path.parent / "collection-build"
        galaxy = Path(sys.executable).with_name("ansible-galaxy")
        run([str(galaxy), "collection", "build", "--force", "--output-path", str(out), str(repo)],
            "ansible-galaxy collection build")
        (tarball,) = out.glob("multigres-pools-*.tar.gz")
        tarball.replace(path)
        shutil.rmtree(out)
    return Input(name, digest(["collection", source_key(repo, COLLECTION_PARTS)]), write)


def kubernetes_core_dir(repo: Path) -> Path:
    """kubernetes.core as make setup unpacks it from the `ansible` package (tools/setup.sh)."""
    return repo / ".venv" / "collections" / "ansible_collections" / "kubernetes" / "core"


def installed_collection(name: str, source: Path) -> Input:
    """An installed collection packed back into the artifact tarball ansible-galaxy installs from.
    The copy the `ansible` package ships leaves out some files its FILES.json lists (`.github/`), so
    FILES.json keeps only the entries that are there, and MANIFEST.json gets that file's new checksum;
    every file's own checksum still holds."""
    def write(path: Path) -> None:
        files = json.loads((source / "FILES.json").read_text())
        files["files"] = [f for f in files["files"] if f["name"] == "." or (source / f["name"]).exists()]
        files_json = json.dumps(files, indent=2).encode()
        manifest = json.loads((source / "MANIFEST.json").read_text())
        manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
        with tarfile.open(path, "w:gz") as tar:
            for member, data in (("MANIFEST.json", json.dumps(manifest, indent=2).encode()),
                                 ("FILES.json", files_json)):
                info = tarfile.TarInfo(member)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
            for entry in files["files"]:
                if entry["name"] != ".":
                    tar.add(source / entry["name"], arcname=entry["name"], recursive=False)
    return Input(name, digest([_bytes(source / "MANIFEST.json"), _bytes(source / "FILES.json")]), write)


def binaries(name: str, source_dir: Path, commands: tuple[str, ...]) -> Input:
    """Go-built binaries from a cached build directory, copied into `name`/ (keyed by their bytes:
    about a second for Multigres' 230 MB)."""
    def write(path: Path) -> None:
        path.mkdir(parents=True)
        for command in commands:
            if not (source_dir / command).is_file():
                raise ImageBuildError(f"copy {command}: {source_dir / command} is missing (make setup builds it)")
            shutil.copy2(source_dir / command, path / command)
    key = digest(["binaries", *(b for c in commands for b in (c, _bytes(source_dir / c)))])
    return Input(name, key, write)


def _bytes(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b"missing"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the base class's name
        """Not a line per wheel on the console: pip reports what it installs in the build log."""


@contextlib.contextmanager
def served_wheels(requirements: tuple[str, ...], progress: Callable[[str], None]) -> Iterator[dict[str, str]]:
    """Wheels of `requirements` (and what they need), fetched and built by this machine's pip (its
    index, mirror and certificates) and served on 127.0.0.1 for the build's own pip: yields the
    build arguments that point it there (`PIP_NO_INDEX`, `PIP_FIND_LINKS`). The images' Python is
    this one's (3.11 on Debian bookworm), so the wheels fit."""
    if not requirements:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="wheels-") as tmp:
        folder = Path(tmp)
        (folder / "requirements.in").write_text("\n".join(requirements) + "\n")
        progress(f"images: fetching {len(requirements)} pinned Python requirements as wheels ...")
        run([*_pip(), "wheel", "-q", "-w", str(folder / "wheels"), "-r", str(folder / "requirements.in")],
            "fetch the wheels the build installs")
        handler = functools.partial(_QuietHandler, directory=str(folder / "wheels"))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"http://127.0.0.1:{server.server_address[1]}/"}
        finally:
            server.shutdown()
            server.server_close()


def materialise(inputs: tuple[Input, ...], context: Path) -> None:
    for item in inputs:
        target = context / item.name
        target.parent.mkdir(parents=True, exist_ok=True)
        item.write(target)
