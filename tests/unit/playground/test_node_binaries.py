"""The real node's binaries: one cache directory per Go build directory, keyed by that directory
alone, and each add-on module pins what it builds. Nothing is built here."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from multigres_pools.playground import node_binaries
from multigres_pools.playground.node_binaries import BUILDS, GoBuild

NAMES = {"kubelet", "kube-proxy", "kube-scheduler", "kubectl", "coredns", "kube-router", "local-path-provisioner"}


def test_every_binary_has_exactly_one_build() -> None:
    assert sorted(node_binaries.NAMES) == sorted(NAMES)


def test_a_change_in_one_directory_moves_only_its_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    builds = []
    for name in ("a", "b"):
        source = tmp_path / name
        source.mkdir()
        (source / "go.mod").write_text(f"module example.com/{name}\n")
        builds.append(GoBuild(name, "v1", source, ".", (name,)))
    before = [b.cache_dir() for b in builds]
    assert before[0].parent == before[1].parent == tmp_path / "cache" / "multigres-pools"
    (builds[0].source / "main.go").write_text("package main\n")
    assert builds[0].cache_dir() != before[0] and builds[1].cache_dir() == before[1]
    # Files that are not build inputs do not count.
    (builds[1].source / "README").write_text("x")
    assert builds[1].cache_dir() == before[1]


def test_cached_finds_only_executables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "src"
    source.mkdir()
    (source / "go.mod").write_text("module example.com/x\n")
    build = GoBuild("x", "v1", source, ".", ("x", "y"))
    monkeypatch.setattr(node_binaries, "BUILDS", (build,))
    build.cache_dir().mkdir(parents=True)
    (build.cache_dir() / "x").write_text("")
    (build.cache_dir() / "x").chmod(0o755)
    (build.cache_dir() / "y").write_text("")
    assert node_binaries.cached() == {"x": build.cache_dir() / "x"} and build.missing()


@pytest.mark.parametrize("build", [b for b in BUILDS if b.source.parent.name == "node_addons"], ids=lambda b: b.name)
def test_each_addon_module_pins_the_version_it_is_cached_under(build: GoBuild) -> None:
    mod = (build.source / "go.mod").read_text()
    assert (build.source / "go.sum").is_file()
    upstream = {"coredns": "github.com/coredns/coredns", "kube-router": "github.com/cloudnativelabs/kube-router/v2",
                "local-path-provisioner": "github.com/rancher/local-path-provisioner"}[build.name]
    assert re.search(rf"^(?:require |\t){re.escape(upstream)} {re.escape(build.version)}\b", mod, re.M), mod
    if build.package != ".":
        assert f"tool {build.package}\n" in mod


def test_coredns_main_compiles_in_exactly_its_directives() -> None:
    """Each directive has its plugin imported, and nothing else is imported as a plugin."""
    main = (node_binaries.ADDONS / "coredns" / "main.go").read_text()
    directives = re.findall(r'^\t"([a-z]+)",$', main.split("var directives")[1], re.M)
    imported = re.findall(r'_ "github.com/coredns/coredns/plugin/([a-z]+)"', main)
    assert sorted(directives) == sorted(imported) and len(directives) == 8


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_missing_source_directory_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build = GoBuild("gone", "v1", tmp_path / "nowhere", ".", ("gone",))
    with pytest.raises(SystemExit, match=r"has no go\.mod"):
        node_binaries.build(build)
