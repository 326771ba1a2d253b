"""The image recipes and their single sources, checked without building anything."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import Pool
from packaging.requirements import Requirement

from multigres_pools import ansible_operator_image
from multigres_pools.images import build, catalog, inputs
from multigres_pools.images.lock import pins
from multigres_pools.images.steps import ImageBuildError, run
from multigres_pools.install import bundle
from tests.helpers.collection import REPO


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", requirement.split("==")[0].lower())


def test_release_is_the_collection_and_package_version() -> None:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert keys.RELEASE == galaxy == project
    assert keys.POOLS_IMAGE.endswith(f":{keys.RELEASE}") and keys.ANSIBLE_OPERATOR_IMAGE.endswith(f":{keys.RELEASE}")


def test_every_shipped_reference_to_the_project_image_is_the_one_name() -> None:
    sidecar = (REPO / "gitops" / "argocd" / "repo-server-sidecar.yaml").read_text()
    assert re.findall(r"image: (\S+)", sidecar) == [keys.POOLS_IMAGE]
    for deployment in ("operator-deployment.yaml", "agent-deployment.yaml"):
        assert re.findall(r"image: (\S+)", (REPO / "manifests" / deployment).read_text()) == [keys.POOLS_IMAGE]


def test_runtime_lock_agrees_with_the_pins_and_the_declared_dependencies() -> None:
    lock = {_name(p): p.split("==")[1] for p in pins(REPO / catalog.POOLS_LOCK)}
    development = {_name(p): p.split("==")[1] for p in pins(REPO / "requirements.txt")}
    for name, version in lock.items():
        assert development.get(name, version) == version, f"{name}: lock {version}, pinned {development[name]}"
    for declared in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(declared)
        assert _name(req.name) in lock, f"{req.name} is a dependency but not in {catalog.POOLS_LOCK}"
        assert req.specifier.contains(lock[_name(req.name)]), f"{req.name} {lock[_name(req.name)]} not {req.specifier}"
    assert not {"pytest", "ruff", "mypy", "psycopg", "molecule", "ansible-lint", "hypothesis"} & set(lock)


@pytest.mark.parametrize("recipe", [r for r in catalog.RECIPES if r.generate is None], ids=lambda r: r.name)
def test_each_recipe_takes_its_base_as_an_argument_and_runs_as_its_numeric_user(recipe: catalog.Recipe) -> None:
    text = recipe.containerfile(REPO).read_text()
    assert re.search(r"^ARG BASE=\S+$", text, re.M) and re.search(r"^FROM \$\{BASE\}", text, re.M)
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] == str(recipe.user)


def test_the_execution_environment_definition_names_what_make_images_provides() -> None:
    recipe = catalog.BY_NAME["execution-environment"]
    definition = yaml.safe_load(recipe.containerfile(REPO).read_text())
    assert definition["version"] == 3 and recipe.base_arg == "EE_BASE_IMAGE"
    files = {Path(i.name).name for i in recipe.inputs(REPO)} - {catalog.EE_DEFINITION}
    assert {f["src"] for f in definition["additional_build_files"]} == files
    assert {Path(c["name"]).name for c in definition["dependencies"]["galaxy"]["collections"]} == files
    # ansible-builder's own pip steps find these installed in the image make images builds it FROM.
    assert recipe.base == "execution-environment-deps"
    wheels = catalog.BY_NAME["execution-environment-deps"].wheels(REPO)
    for dependency in ("ansible_core", "ansible_runner"):
        assert definition["dependencies"][dependency]["package_pip"] in wheels
    assert catalog.EE_INIT in wheels and not set(catalog.BINDEP) & set(wheels)


def test_with_bases_puts_a_base_before_what_is_built_from_it() -> None:
    order = [r.name for r in catalog.with_bases(("ansible-operator", "pools"))]
    assert order == ["pools-deps", "pools", "ansible-operator-base", "ansible-operator-deps", "ansible-operator"]


DEPS = {"pools": "pools-deps", "ansible-operator": "ansible-operator-deps",
        "execution-environment": "execution-environment-deps"}


def test_each_image_of_our_code_is_built_from_a_local_deps_image() -> None:
    """The -deps images are build bases under local names. The pools Containerfile names pools-deps
    as its default base; the Ansible Operator's -deps image starts from the base its generated
    Containerfile names (which alone still builds the whole image), and the EE's from ee-base."""
    refs = {"pools-deps": catalog.POOLS_DEPS_IMAGE, "ansible-operator-deps": catalog.ANSIBLE_OPERATOR_DEPS_IMAGE,
            "execution-environment-deps": catalog.EE_DEPS_IMAGE}
    for name, deps in DEPS.items():
        assert catalog.BY_NAME[name].base == deps and catalog.BY_NAME[deps].ref == refs[deps]
        assert refs[deps].startswith(f"{catalog.LOCAL_NAMES}/") and refs[deps].endswith(f":{keys.RELEASE}")
        assert catalog.BY_NAME[deps].version == keys.RELEASE

    def default_base(name: str) -> str:
        (found,) = re.findall(r"^ARG BASE=(\S+)$", catalog.BY_NAME[name].containerfile(REPO).read_text(), re.M)
        return str(found)

    assert default_base("pools") == catalog.POOLS_DEPS_IMAGE
    assert default_base("ansible-operator") == ansible_operator_image.BASE_IMAGE
    assert default_base("ansible-operator-deps") == ansible_operator_image.BASE_IMAGE
    assert default_base("ansible-operator-deps") == catalog.BY_NAME["ansible-operator-base"].ref
    assert default_base("execution-environment-deps") == catalog.BY_NAME["execution-environment-base"].ref


def test_the_deps_images_install_what_the_recipes_over_them_would(tmp_path: Path) -> None:
    """ansible-operator's generated Containerfile and the EE definition keep their own pip steps; over
    a -deps image those find everything installed, and the build gives them no index for the rest."""
    installed = _requirements(catalog.BY_NAME["ansible-operator-deps"], tmp_path / "operator")
    assert installed == list(catalog.BY_NAME["ansible-operator-deps"].wheels(REPO))
    step = re.search(r"^RUN pip3 install --no-cache-dir (\S+) -r ", ansible_operator_image.containerfile(REPO), re.M)
    assert step and installed == [step[1], *pins(REPO / "meta" / "requirements.txt")]
    top = catalog.BY_NAME["ansible-operator"]
    assert top.wheels(REPO) == () and top.build_args == {"PIP_NO_INDEX": "1"}
    ee = catalog.BY_NAME["execution-environment-deps"]
    assert _requirements(ee, tmp_path / "ee") == list(ee.wheels(REPO))


def _requirements(recipe: catalog.Recipe, context: Path) -> list[str]:
    """The lines of the requirements.txt a -deps recipe's context holds (all it holds)."""
    items = recipe.inputs(REPO)
    assert [i.name for i in items] == ["requirements.txt"]
    context.mkdir()
    inputs.materialise(items, context)
    return [line for line in (context / "requirements.txt").read_text().splitlines() if line]


def test_a_code_change_keys_only_the_images_over_the_deps(tmp_path: Path) -> None:
    """What a -deps image is built from is keyed without our code: a change to the package or the
    collection changes the keys of pools, ansible-operator and the EE, never of their -deps images."""
    for part in ("requirements.txt", "pyproject.toml", "galaxy.yml", "meta", "images"):
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part)
        else:
            shutil.copy2(source, tmp_path / part)
    core = inputs.kubernetes_core_dir(REPO)
    (inputs.kubernetes_core_dir(tmp_path)).mkdir(parents=True)
    for name in ("requirements.txt", "MANIFEST.json", "FILES.json"):
        if (core / name).is_file():
            shutil.copy2(core / name, inputs.kubernetes_core_dir(tmp_path) / name)
    code = tmp_path / "src" / "multigres_pools" / "__init__.py"
    code.parent.mkdir(parents=True)
    code.write_text('"""the package"""\n')

    def keys_now() -> dict[str, tuple[str, ...]]:
        recipes = [catalog.BY_NAME[name] for pair in DEPS.items() for name in pair]
        return {r.name: (*(i.key for i in r.inputs(tmp_path)), *r.wheels(tmp_path)) for r in recipes}

    before = keys_now()
    code.write_text('"""the package"""\n# changed\n')
    after = keys_now()
    assert {name for name in before if before[name] != after[name]} == set(DEPS)


def test_the_content_key_follows_every_input(tmp_path: Path) -> None:
    folder = tmp_path / "images" / "x"
    folder.mkdir(parents=True)
    containerfile = folder / "Containerfile"
    containerfile.write_text("ARG BASE\nFROM ${BASE}\n")
    recipe = catalog.Recipe("x", "example/x:1", catalog.BOOKWORM, lambda _r: (), "1", 1000)

    def key(base: str = "b", args: dict[str, str] | None = None, note: str = "n") -> str:
        return build._key(recipe, tmp_path, base, args or {"A": "1"}, (inputs.text("note", note),))

    first = key()
    assert key() == first
    assert len({first, key(base="c"), key(args={"A": "2"}), key(note="m")}) == 4
    containerfile.write_text("ARG BASE\nFROM ${BASE}\nUSER 1000\n")
    assert key() != first


def test_a_source_folder_is_keyed_and_copied_without_what_building_it_in_place_leaves(tmp_path: Path) -> None:
    """pip builds a local project in place: its build/, *.egg-info and __pycache__ neither change
    the key (three Ansible Operator images were once rebuilt because a test had installed the event
    plugin from the Go module cache) nor reach the build context; a source change does."""
    source = tmp_path / "plugin"
    (source / "pkg").mkdir(parents=True)
    (source / "setup.py").write_text("setup()\n")
    (source / "pkg" / "events.py").write_text("X = 1\n")
    pristine = inputs.tree("plugin", source).key
    for leftover in ("build/lib/pkg/events.py", "plugin.egg-info/SOURCES.txt", "pkg/__pycache__/events.pyc"):
        (source / leftover).parent.mkdir(parents=True, exist_ok=True)
        (source / leftover).write_text("made by a build\n")
    item = inputs.tree("plugin", source)
    assert item.key == pristine
    item.write(tmp_path / "context")
    copied = sorted(p.relative_to(tmp_path / "context").as_posix() for p in (tmp_path / "context").rglob("*"))
    assert copied == ["pkg", "pkg/events.py", "setup.py"]
    (source / "pkg" / "events.py").write_text("X = 2\n")
    assert inputs.tree("plugin", source).key != pristine


def test_a_missing_tool_names_the_step() -> None:
    with pytest.raises(ImageBuildError, match=r"^make the thing: no-such-builder not found on PATH"):
        run(["no-such-builder", "bud"], "make the thing")


def test_a_failing_step_ends_with_its_output() -> None:
    with pytest.raises(ImageBuildError) as failure:
        run(["sh", "-c", "echo first; echo the-cause >&2; exit 3"], "step one")
    assert str(failure.value).splitlines()[0] == "step one: sh -c echo first; echo the-cause >&2; exit 3 exited 3:"
    assert str(failure.value).splitlines()[-1] == "the-cause"


def test_the_registry_mirror_example_overrides_the_bundle_image() -> None:
    folder = REPO / "examples" / "registry-mirror"
    overlay = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert [(folder / r).resolve() for r in overlay["resources"]] == [(REPO / "manifests").resolve()]
    assert [i["name"] for i in overlay["images"]] == [keys.POOLS_IMAGE.rsplit(":", 1)[0]]


def test_image_users_are_the_ones_pods_and_the_bundle_run_as() -> None:
    """A kubelet checks runAsNonRoot against the image's numeric USER; the pods set their own uid,
    and the images' files must belong to it: the two must agree."""
    assert catalog.BY_NAME["pgctld"].user == Pool.model_fields["fs_group"].default
    assert catalog.BY_NAME["pools"].user == bundle._UID


def test_node_images_are_importable_names_and_local() -> None:
    assert catalog.BY_NAME["pause"].ref == catalog.PAUSE_IMAGE == f"{catalog.LOCAL_NAMES}/pause:3.10"
    helper = catalog.BY_NAME["node-helper"]
    assert helper.ref == catalog.NODE_HELPER_IMAGE == f"{catalog.LOCAL_NAMES}/node-helper:{catalog.BUSYBOX_VERSION}"
    # The tag is the busybox version the build checks Debian's package against.
    assert helper.build_args == {"BUSYBOX_VERSION": catalog.BUSYBOX_VERSION}
    assert helper.version == catalog.BUSYBOX_VERSION
    assert [i.name for i in catalog.BY_NAME["pause"].inputs(REPO)] == ["pause.c"]


@pytest.mark.parametrize("recipe", [r for r in catalog.RECIPES if r.generate is None], ids=lambda r: r.name)
def test_an_image_from_scratch_lists_no_debian_packages(recipe: catalog.Recipe) -> None:
    """packages.txt comes from dpkg inside the image: only a final stage on the Debian base has one."""
    stages = re.findall(r"^FROM (\S+)", recipe.containerfile(REPO).read_text(), re.M)
    assert recipe.debian == (stages[-1] != "scratch")


def test_pause_source_handles_what_a_sandbox_must() -> None:
    source = (REPO / "images" / "pause" / "pause.c").read_text()
    for needed in ("SIGTERM", "SIGINT", "SIGCHLD", "waitpid(-1", "WNOHANG", "pause()"):
        assert needed in source
    assert 'ENTRYPOINT ["/pause"]' in catalog.BY_NAME["pause"].containerfile(REPO).read_text()
