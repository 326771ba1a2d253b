"""ArgoCD for real in tests: the application controller, the repo server and a config-management
plugin sidecar (argocd-cmp-server running gitops/argocd/plugin.yaml) of argo-cd v3.6.1, built from
the Go module proxy (playground/argocd_bin), with Debian's redis-server as their cache, run as
processes against the harness's API server. The CRDs and the settings objects come from the same
module version's manifests.

v3.6.1, not v3.5.x: v3.5 names a gitops-engine pseudo-version the proxy here refuses (403), and the
served one it could be pointed at no longer compiles against it. v3.6 needs Go 1.27, so this one
build runs with GOTOOLCHAIN=go1.27.3, a toolchain the proxy serves (docs/gitops.md). argo-cd ships
one binary for all its commands (it dispatches on its own name), linked here under each name.

    python -m multigres_pools.playground.argocd --ensure     # build if missing, print the path
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground import node_binaries
from multigres_pools.playground.localstack import Process, ensure_namespace, free_port, http_get, wait_for
from multigres_pools.playground.node_binaries import GoBuild

VERSION = "v3.6.1"
TOOLCHAIN = "go1.27.3"  # argo-cd v3.6's go.mod says go 1.27.0; the machine's Go is older
MODULE = "github.com/argoproj/argo-cd/v3"
SOURCE_DIR = Path(__file__).resolve().parent / "argocd_bin"
# `go build` names the binary after the package's last element: cmd.
BUILDS = (GoBuild("argocd", VERSION, SOURCE_DIR, f"{MODULE}/cmd", ("cmd",), minutes="12-15 minutes"),)
NAMESPACE = "argocd"
COMMANDS = ("argocd", "argocd-application-controller", "argocd-repo-server", "argocd-cmp-server",
            "argocd-git-ask-pass")
FIELD_MANAGER = "multigres-pools-tests"
PART_OF = {"app.kubernetes.io/part-of": "argocd"}  # the settings informers list only these
# The repo server runs `git-verify-wrapper.sh <revision>` from PATH for every revision it renders, GPG
# or not, and fails the render when it fails (argo-cd's image ships one). Ours: an unsigned commit
# (git's exit 1) is no error; the output is what git says.
VERIFY_WRAPPER = """#!/bin/sh
out=$(git verify-commit "$1" 2>&1)
rc=$?
if [ "$rc" -gt 1 ]; then echo "$out" >&2; exit "$rc"; fi
echo "$out"
"""


@contextmanager
def _toolchain() -> Iterator[None]:
    """GOTOOLCHAIN for this build only: the shared go_build passes the environment through."""
    before = os.environ.get("GOTOOLCHAIN")
    os.environ["GOTOOLCHAIN"] = TOOLCHAIN
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("GOTOOLCHAIN", None)
        else:
            os.environ["GOTOOLCHAIN"] = before


def resolve() -> Path:
    """The argocd binary, built first if missing."""
    with _toolchain():
        return node_binaries.resolve(BUILDS)["cmd"]


def module_dir() -> Path:
    """argo-cd's module source at VERSION (downloaded if need be), for its manifests."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"], cwd=SOURCE_DIR, check=True,
                         capture_output=True, text=True, timeout=600, env={**os.environ, "GOTOOLCHAIN": TOOLCHAIN})
    return Path(json.loads(out.stdout)["Dir"])


def crd_documents() -> list[dict[str, Any]]:
    """Application and AppProject, the two kinds the controller needs."""
    crds = module_dir() / "manifests" / "crds"
    return [yaml.safe_load((crds / f"{kind}-crd.yaml").read_text()) for kind in ("application", "appproject")]


def install(kube: KubeClient, health_lua: str) -> None:
    """CRDs, the namespace, argocd-cm with our health check, argocd-secret and the default project
    (argocd-server, which we do not run, would create that project)."""
    docs = crd_documents()
    for crd in docs:
        kube.apply(crd, FIELD_MANAGER, force=True)

    def established() -> bool:
        return all(facts.condition_true(kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None,
                                                 crd["metadata"]["name"]) or {}, "Established") for crd in docs)

    wait_for(established, 60, "ArgoCD's CRDs to be established")
    ensure_namespace(kube, NAMESPACE)
    meta = {"namespace": NAMESPACE, "labels": PART_OF}
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", **meta},
                "data": {"resource.customizations.health.pools.multigres.com_MultigresShard": health_lua}},
               FIELD_MANAGER, force=True)
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "argocd-secret", **meta},
                "stringData": {"server.secretkey": secrets.token_urlsafe(32)}}, FIELD_MANAGER, force=True)
    kube.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                "metadata": {"name": "default", "namespace": NAMESPACE},
                "spec": {"sourceRepos": ["*"], "destinations": [{"namespace": "*", "server": "*"}],
                         "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}}, FIELD_MANAGER, force=True)


class ArgoCD:
    """Redis, the repo server, our plugin's cmp-server and the application controller, as processes
    on 127.0.0.1 (the controller's metrics server binds all interfaces: argo-cd has no flag for it).
    The repo server finds the plugin by its socket in plugins/, as in the sidecar layout."""

    def __init__(self, workdir: Path, kubeconfig: Path, plugin: Path) -> None:
        self.workdir, self.kubeconfig, self.plugin = workdir, kubeconfig, plugin
        self.redis_port, self.repo_port = free_port(), free_port()
        self.controller_metrics, self.repo_metrics = free_port(), free_port()
        self.processes: list[Process] = []

    def _layout(self) -> dict[str, str]:
        """Each command's link, the plugin's config, and the environment all processes share."""
        binary = resolve()
        bindir = self.workdir / "bin"
        for sub in ("bin", "plugins", "config", "cmp", "tmp", "redis"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        for name in COMMANDS:
            link = bindir / name
            link.unlink(missing_ok=True)
            link.symlink_to(binary)
        wrapper = bindir / "git-verify-wrapper.sh"
        wrapper.write_text(VERIFY_WRAPPER)
        wrapper.chmod(0o755)
        shutil.copyfile(self.plugin, self.workdir / "config" / "plugin.yaml")
        return {"PATH": f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "HOME": str(self.workdir), "TMPDIR": str(self.workdir / "tmp"),
                "ARGOCD_PLUGINSOCKFILEPATH": str(self.workdir / "plugins"),
                "ARGOCD_CMP_WORKDIR": str(self.workdir / "cmp"), "ARGOCD_GPG_ENABLED": "false"}

    def start(self) -> ArgoCD:
        env = self._layout()
        bindir, logs = self.workdir / "bin", self.workdir
        text = ["--logformat", "text", "--loglevel", "info"]
        redis = f"127.0.0.1:{self.redis_port}"
        self.processes = [
            Process("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "",
                              "--appendonly", "no", "--dir", str(self.workdir / "redis")], logs / "redis.log", env=env),
            Process("cmp-server", [str(bindir / "argocd-cmp-server"), *text, "--config-dir-path",
                                   str(self.workdir / "config")], logs / "cmp-server.log", env=env),
            # plaintext on loopback; the client CA path defaults to a file and refuses --disable-tls
            Process("repo-server", [str(bindir / "argocd-repo-server"), *text, "--disable-tls", "--client-ca-path=",
                                    "--redis", redis,
                                    "--address", "127.0.0.1", "--port", str(self.repo_port),
                                    "--metrics-address", "127.0.0.1", "--metrics-port", str(self.repo_metrics)],
                    logs / "repo-server.log", env=env),
            Process("application-controller",
                    [str(bindir / "argocd-application-controller"), *text, "--kubeconfig", str(self.kubeconfig),
                     "--namespace", NAMESPACE, "--redis", redis, "--repo-server", f"127.0.0.1:{self.repo_port}",
                     "--repo-server-plaintext", "--metrics-port", str(self.controller_metrics),
                     # the tests ask for each refresh; self-heal and retries at once rather than after 5 s
                     "--app-resync", "3600", "--self-heal-timeout-seconds", "1"],
                    logs / "application-controller.log",
                    # the in-cluster destination from the kubeconfig instead of a pod's service account
                    env={**env, "ARGOCD_FAKE_IN_CLUSTER": "true", "KUBECONFIG": str(self.kubeconfig)}),
        ]
        try:
            for process in self.processes:
                process.start()
            wait_for(self._healthy, 120, "ArgoCD's processes",
                     last_seen=lambda: " | ".join(f"{p.name}: {p.tail(300)}" for p in self.processes))
        except BaseException:
            self.stop()  # `with` calls no __exit__ when __enter__ raises: the started ones would linger
            raise
        return self

    def _healthy(self) -> bool:
        if not all(p.alive() for p in self.processes):
            raise RuntimeError("an ArgoCD process exited: " + " | ".join(
                f"{p.name}: {p.tail(1500)}" for p in self.processes if not p.alive()))
        sockets = list((self.workdir / "plugins").glob("*.sock"))
        return (bool(sockets) and http_get(f"http://127.0.0.1:{self.repo_metrics}/healthz")[0] == 200
                and http_get(f"http://127.0.0.1:{self.controller_metrics}/healthz")[0] == 200)

    def log(self, name: str, chars: int = 6000) -> str:
        return next(p.tail(chars) for p in self.processes if p.name == name)

    def stop(self) -> None:
        # Throwaway servers: 5 s to exit on SIGTERM, then SIGKILL, not Process.stop's default 30 s.
        for process in reversed(self.processes):
            process.stop(grace=5)
        # argo-cd's git credential helper socket has a fixed path under /tmp, whatever TMPDIR says
        Path("/tmp/reposerver-ask-pass.sock").unlink(missing_ok=True)
        for sock in (self.workdir / "plugins").glob("*.sock"):
            sock.unlink(missing_ok=True)

    def __enter__(self) -> ArgoCD:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def main() -> int:
    with _toolchain():
        return node_binaries.cli(BUILDS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
