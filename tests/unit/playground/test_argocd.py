"""What the ArgoCD build and run rest on, checked without building: the wrapper module pins the
version it is cached under and a Go the toolchain we set can build, and the Application we ship
names the plugin by the socket argocd-cmp-server opens for our plugin.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from multigres_pools.playground import argocd

GITOPS = Path(__file__).resolve().parents[3] / "gitops" / "argocd"


def test_the_wrapper_module_pins_argo_cd_and_its_gitops_engine_at_the_cached_version() -> None:
    mod = (argocd.SOURCE_DIR / "go.mod").read_text()
    assert (argocd.SOURCE_DIR / "go.sum").is_file()
    for module in (argocd.MODULE, "github.com/argoproj/argo-cd/gitops-engine/v3"):
        assert re.search(rf"^\t{re.escape(module)} {re.escape(argocd.VERSION)}\b", mod, re.M), module
    assert f"tool {argocd.BUILDS[0].package}\n" in mod
    # no replace of gitops-engine with a directory: a module built as a dependency has none
    assert "=> ./" not in mod


def test_the_toolchain_is_new_enough_for_the_go_line() -> None:
    wanted = re.search(r"^go (\d+)\.(\d+)", (argocd.SOURCE_DIR / "go.mod").read_text(), re.M)
    have = re.fullmatch(r"go(\d+)\.(\d+)\.\d+", argocd.TOOLCHAIN)
    assert wanted and have
    assert tuple(map(int, have.groups())) >= tuple(map(int, wanted.groups()))


def test_the_shipped_application_names_the_socket_of_the_shipped_plugin() -> None:
    plugin = yaml.safe_load((GITOPS / "plugin.yaml").read_text())
    app = yaml.safe_load((GITOPS / "application.yaml").read_text())
    # argocd-cmp-server listens on <name>-<version>.sock; the repo server looks the name up there
    assert app["spec"]["source"]["plugin"]["name"] == f"{plugin['metadata']['name']}-{plugin['spec']['version']}"
