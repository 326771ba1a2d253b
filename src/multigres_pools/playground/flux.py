"""Flux for real in tests: source-controller and kustomize-controller v1.9.3 (Flux 2.9), built from
the Go module proxy (playground/flux_bin pins them and what their own go.mod replaces) and run as
processes against the harness's API server, with their CRDs from the same module versions.

v1.9.3, not the newest: v1.10.x needs Go 1.27, and v1.9.4 to v1.9.6 need fluxcd/pkg/artifact
versions the proxy here refuses (403). Cached under ~/.cache/multigres-pools/ like the node
binaries; never a prebuilt download.

    python -m multigres_pools.playground.flux --ensure     # build if missing, print the paths
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground import node_binaries
from multigres_pools.playground.localstack import Process, free_port, wait_for
from multigres_pools.playground.node_binaries import GoBuild

VERSION = "v1.9.3"
SOURCE_DIR = Path(__file__).resolve().parent / "flux_bin"
MODULES = {"source-controller": "github.com/fluxcd/source-controller",
           "kustomize-controller": "github.com/fluxcd/kustomize-controller"}
BUILDS = tuple(GoBuild(f"flux-{name}", VERSION, SOURCE_DIR, module, (name,), minutes="5-10 minutes")
               for name, module in MODULES.items())
NAMESPACE = "flux-system"


def resolve() -> dict[str, Path]:
    """Each controller's binary, built first if missing (one at a time; they share Go's build cache)."""
    return node_binaries.resolve(BUILDS)


def crd_documents() -> list[dict[str, Any]]:
    """The CRDs of both controllers at the pinned versions, from their module sources: every
    source kind (kustomize-controller watches them all), and Kustomization."""
    docs: list[dict[str, Any]] = []
    for module in MODULES.values():
        out = subprocess.run(["go", "mod", "download", "-json", f"{module}@{VERSION}"], cwd=SOURCE_DIR,
                             check=True, capture_output=True, text=True, timeout=600)
        bases = Path(json.loads(out.stdout)["Dir"]) / "config" / "crd" / "bases"
        for path in sorted(bases.glob("*.yaml")):
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def install_crds(kube: KubeClient) -> None:
    """Apply the CRDs and wait until the API server serves them: a controller that starts before
    discovery lists its kinds exits ("no matches for kustomize.toolkit.fluxcd.io/v1")."""
    docs = crd_documents()
    for crd in docs:
        kube.apply(crd, "multigres-pools-tests", force=True)

    def established() -> bool:
        for crd in docs:
            live = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, crd["metadata"]["name"]) or {}
            if not facts.condition_true(live, "Established"):
                return False
        return True

    wait_for(established, 60, "Flux's CRDs to be established")


class Flux:
    """Both controllers for every namespace, as processes: source-controller serves the artifacts
    it fetched over HTTP on 127.0.0.1; kustomize-controller applies them."""

    def __init__(self, workdir: Path, kubeconfig: Path) -> None:
        self.workdir, self.kubeconfig = workdir, kubeconfig
        self.storage_port = free_port()  # kept across restarts: the artifact URLs in the status name it
        self.processes: list[Process] = []

    def start(self) -> Flux:
        binaries = resolve()
        (self.workdir / "storage").mkdir(parents=True, exist_ok=True)  # source-controller wants it there
        env = {"KUBECONFIG": str(self.kubeconfig), "RUNTIME_NAMESPACE": NAMESPACE, "HOME": str(self.workdir)}
        common = ["--watch-all-namespaces=true", "--enable-leader-election=false", "--log-encoding=console",
                  "--events-addr="]
        self.processes = [
            Process("source-controller", [str(binaries["source-controller"]), *common,
                                          f"--metrics-addr=127.0.0.1:{free_port()}",
                                          f"--health-addr=127.0.0.1:{free_port()}",
                                          f"--storage-path={self.workdir / 'storage'}",
                                          f"--storage-addr=127.0.0.1:{self.storage_port}",
                                          f"--storage-adv-addr=127.0.0.1:{self.storage_port}"],
                    self.workdir / "source-controller.log", env=env),
            Process("kustomize-controller", [str(binaries["kustomize-controller"]), *common,
                                             f"--metrics-addr=127.0.0.1:{free_port()}",
                                             f"--health-addr=127.0.0.1:{free_port()}"],
                    self.workdir / "kustomize-controller.log", env=env),
        ]
        for process in self.processes:
            process.start()
        wait_for(lambda: all(p.alive() for p in self.processes) and self._healthy(), 60, "Flux's controllers")
        return self

    def _healthy(self) -> bool:
        return all("Starting workers" in p.tail(1_000_000) for p in self.processes)

    def log(self, name: str, chars: int = 6000) -> str:
        return next(p.tail(chars) for p in self.processes if p.name == name)

    def stop(self) -> None:
        for process in self.processes:
            process.stop(grace=5)  # throwaway controllers, as ArgoCD.stop

    def __enter__(self) -> Flux:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def main() -> int:
    return node_binaries.cli(BUILDS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
