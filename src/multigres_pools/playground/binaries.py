"""Locate or build the real etcd, kube-apiserver and kube-controller-manager used by the tests.

Binaries are built from the pinned k8s.io/kubernetes Go module (playground/kubebin) once per
machine and cached outside the checkout, keyed by version and by the build inputs. Prebuilt
envtest binaries under KUBEBUILDER_ASSETS are preferred where present (envtest ships etcd and
kube-apiserver but no controller-manager, which is then still built here).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

KUBE_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.4"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
SOURCE_DIR = Path(__file__).resolve().parent / "kubebin"


def source_key(source: Path) -> str:
    """A short digest of a Go build directory's inputs (.go, go.mod, go.sum): a cache key."""
    digest = hashlib.sha256()
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.suffix in {".go", ".mod", ".sum"}:
            digest.update(path.relative_to(source).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "multigres-pools"


def cache_dir() -> Path:
    return cache_root() / f"kube-{KUBE_VERSION}-{source_key(SOURCE_DIR)}"


def build_once(missing: Callable[[], bool], build: Callable[[], None]) -> None:
    """Run `build` if `missing()`, holding the cache's build lock: several test processes may
    start at once on a fresh machine; one builds, the rest wait and then find the result."""
    if not missing():
        return
    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if missing():
            build()


def go_build(source: Path, package: str, names: tuple[str, ...], target: Path, ldflags: str = "-s -w") -> None:
    """`go build` `package` in the module at `source` into `target`, through a partial directory beside
    it, so a killed build never leaves a half-written binary where a cache lookup would find it."""
    if shutil.which("go") is None:
        raise SystemExit(f"binaries: 'go' is not on PATH; install Go to build {', '.join(names)}")
    if not (source / "go.mod").is_file():
        raise SystemExit(f"binaries: {source} has no go.mod; the checkout is incomplete")
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(["go", "build", "-trimpath", f"-ldflags={ldflags}", "-o", str(tmp) + "/", package],
                   cwd=source, check=True)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        (tmp / name).replace(target / name)
    shutil.rmtree(tmp)


def _build(target: Path) -> None:
    print(f"binaries: building etcd {ETCD_VERSION}, kube-apiserver and kube-controller-manager "
          f"{KUBE_VERSION} into {target} (first build takes 10-20 minutes on 2 cores)", flush=True)
    started = time.monotonic()
    go_build(SOURCE_DIR, "./cmd/...", BINARIES, target)
    print(f"binaries: built in {time.monotonic() - started:.0f}s", flush=True)


def cached() -> dict[str, Path]:
    """The binaries that exist already (prebuilt envtest assets first, then our cache); builds nothing."""
    found: dict[str, Path] = {}
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    for name in BINARIES:
        for directory in ([Path(assets)] if assets else []) + [cache_dir()]:
            candidate = directory / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found[name] = candidate
                break
    return found


def resolve() -> dict[str, Path]:
    """Return the path of each binary, building the missing ones."""
    build_once(lambda: len(cached()) < len(BINARIES), lambda: _build(cache_dir()))
    return cached()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ensure", action="store_true", help="build the binaries if missing")
    args = parser.parse_args()
    paths = resolve() if args.ensure else {n: cache_dir() / n for n in BINARIES}
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
