"""Locate or build the host binaries of the real node: kubelet, kube-proxy, kube-scheduler and
kubectl (playground/nodebin, the pinned k8s.io/kubernetes module) and the cluster add-ons CoreDNS,
kube-router and local-path-provisioner (playground/node_addons/<name>, each a Go module pinning
its upstream module and, where upstream lags, safer versions of its dependencies).

Each Go directory is its own build, cached under ~/.cache/multigres-pools/<name>-<version>-<key>
(key: binaries.source_key of that directory), so a change to one rebuilds only that one. Builds
take the machine's build lock like playground/binaries.py. Never a prebuilt download.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from multigres_pools.playground.binaries import KUBE_VERSION, build_once, cache_root, go_build, source_key

HERE = Path(__file__).resolve().parent
ADDONS = HERE / "node_addons"
KUBE_ROUTER = "github.com/cloudnativelabs/kube-router/v2"


@dataclass(frozen=True)
class GoBuild:
    name: str                      # cache directory prefix
    version: str                   # the upstream version, part of the cache directory's name
    source: Path                   # the Go module directory `go build` runs in
    package: str                   # what to build (`./cmd/...` builds several)
    binaries: tuple[str, ...]      # what the build leaves in its output directory
    ldflags: str = "-s -w"
    minutes: str = "a few minutes"  # cold build time on 2 cores, for the progress line

    def cache_dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}-{source_key(self.source)}"

    def missing(self) -> bool:
        return any(not os.access(self.cache_dir() / b, os.X_OK) for b in self.binaries)


BUILDS = (
    # -X version flags stay off here as in kubebin: kubectl would otherwise warn of version skew
    # against the harness's kube-apiserver, whose version is unset too.
    GoBuild("node", KUBE_VERSION, HERE / "nodebin", "./cmd/...",
            ("kubelet", "kube-proxy", "kube-scheduler", "kubectl"), minutes="10-15 minutes"),
    GoBuild("coredns", "v1.15.0", ADDONS / "coredns", ".", ("coredns",), minutes="about 2 minutes"),
    GoBuild("kube-router", "v2.1.0", ADDONS / "kube-router", f"{KUBE_ROUTER}/cmd/kube-router", ("kube-router",),
            f"-s -w -X {KUBE_ROUTER}/pkg/version.Version=v2.1.0", minutes="about 3 minutes"),
    GoBuild("local-path-provisioner", "v0.0.30", ADDONS / "local-path-provisioner",
            "github.com/rancher/local-path-provisioner", ("local-path-provisioner",),
            "-s -w -X main.VERSION=v0.0.30", minutes="about 2 minutes"),
)
NAMES = tuple(name for build in BUILDS for name in build.binaries)


def build(go: GoBuild) -> None:
    target = go.cache_dir()
    print(f"node_binaries: building {', '.join(go.binaries)} {go.version} into {target} "
          f"(cold: {go.minutes} on 2 cores)", flush=True)
    started = time.monotonic()
    go_build(go.source, go.package, go.binaries, target, go.ldflags)
    print(f"node_binaries: {go.name} built in {time.monotonic() - started:.0f}s", flush=True)


def cached(builds: tuple[GoBuild, ...] | None = None) -> dict[str, Path]:
    """The binaries of `builds` (default BUILDS) that exist already in the cache; builds nothing."""
    found: dict[str, Path] = {}
    for go in BUILDS if builds is None else builds:
        for name in go.binaries:
            candidate = go.cache_dir() / name
            if os.access(candidate, os.X_OK):
                found[name] = candidate
    return found


def resolve(builds: tuple[GoBuild, ...] | None = None) -> dict[str, Path]:
    """Return the path of each binary of `builds` (default BUILDS), building the missing ones (one Go
    directory at a time)."""
    for go in BUILDS if builds is None else builds:
        build_once(go.missing, partial(build, go))
    return cached(builds)


def cli(builds: tuple[GoBuild, ...], description: str) -> int:
    """`--ensure` builds what is missing; either way, print each binary's path."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ensure", action="store_true", help="build the binaries if missing (default: only print)")
    args = parser.parse_args()
    paths = resolve(builds) if args.ensure else {n: b.cache_dir() / n for b in builds for n in b.binaries}
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


def main() -> int:
    return cli(BUILDS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
