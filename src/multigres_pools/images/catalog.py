"""The images `make images` builds, in build order, and where each one's name comes from:

| image | name from | recipe |
|---|---|---|
| pools-deps | a local name, a build base | images/pools-deps |
| pools | keys.POOLS_IMAGE (the install bundle's Deployments) | images/pools/Containerfile (FROM pools-deps) |
| multigres, pgctld | model.RELEASE_IMAGES for v0.1.0 (what pool pods default to) | images/multigres, images/pgctld |
| ansible-operator-base | the Ansible Operator's own base, ansible_operator.VERSION | images/ansible-operator-base |
| ansible-operator-deps | a local name, a build base | images/ansible-operator-deps |
| ansible-operator | keys.ANSIBLE_OPERATOR_IMAGE (generated: ansible_operator_image.py) | images/ansible-operator |
| execution-environment-base | a local name, a build base (root) | images/execution-environment-base |
| execution-environment-deps | a local name, a build base (root) | images/execution-environment-deps |
| execution-environment | keys.EXECUTION_ENVIRONMENT_IMAGE | images/execution-environment/*.yml (ansible-builder) |
| pause | PAUSE_IMAGE (the real node's pod sandbox) | images/pause (our pause.c, FROM scratch) |
| node-helper | NODE_HELPER_IMAGE (the real node's helper and client pods) | images/node-helper (busybox-static) |

Each image that carries our code is built FROM a `-deps` image holding what does not depend on it,
so a code change rebuilds only a thin top: pools-deps is Debian's Python with a venv of the pinned
runtime lock (pools adds the project's wheel); ansible-operator-deps has ansible-core and
meta/requirements.txt over the base, execution-environment-deps every Python package the EE
definition installs (each top adds the collection). The Ansible Operator's Containerfile and the EE
definition stay whole (on the upstream base each builds all of its image); here their own pip steps
find the `-deps` image's packages already installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import RELEASE_IMAGES

from multigres_pools import ansible_operator_image
from multigres_pools.images import inputs
from multigres_pools.images.debian import KEYRING, MIRROR, DebianBase
from multigres_pools.images.lock import pins
from multigres_pools.images.steps import run
from multigres_pools.playground import ansible_operator, toolchain

BOOKWORM, TRIXIE = DebianBase("bookworm"), DebianBase("trixie")
V0_1 = RELEASE_IMAGES[keys.MultigresVersion.V0_1_0]
# Upstream's multigres image carries these five; pgctld has an image of its own.
MULTIGRES_COMMANDS = ("multigres", "multiadmin", "multigateway", "multiorch", "multipooler")
POOLS_LOCK = Path("images") / "pools" / "requirements.txt"
# The Ansible Operator base's sources, inside the ansible-operator-plugins Go module.
OPERATOR_BASE_SOURCES = Path("images") / "ansible-operator"

EE_DEFINITION = "execution-environment.yml"
EE_INIT = "dumb-init==1.2.5"  # ansible-builder 3.1's default container init
# Build-time Python tools the images' own pip runs (ansible_runner_http's build, ansible-builder's
# bindep stage), pinned like everything else; packaging at the version the project pins.
BUILD_TOOLS = ("setuptools==84.2.1", "wheel==0.48.0")
BINDEP = ("bindep==2.14.0", "packaging==26.4")
LOCAL_NAMES = "localhost/multigres-pools"  # images only this machine's builds refer to
# The build bases that hold what does not depend on our code (the -deps recipes below).
POOLS_DEPS_IMAGE = f"{LOCAL_NAMES}/pools-deps:{keys.RELEASE}"
ANSIBLE_OPERATOR_DEPS_IMAGE = f"{LOCAL_NAMES}/ansible-operator-deps:{keys.RELEASE}"
EE_BASE_IMAGE = f"{LOCAL_NAMES}/ee-base:{keys.RELEASE}"
EE_DEPS_IMAGE = f"{LOCAL_NAMES}/ee-deps:{keys.RELEASE}"
# The pip that installs the project's wheel into the pools image's venv, run from its own wheel so
# the image keeps none: the version the development venv has.
PIP_WHEEL = "pip==23.2.1"
# The real test node's own images (playground/node_binaries.py builds its host binaries): the pod
# sandbox containerd's CRI starts first in every pod, and busybox for local-path-provisioner's helper
# pods and test clients. The node-helper tag is Debian's busybox-static version, which the build checks.
PAUSE_VERSION = "3.10"
PAUSE_IMAGE = f"{LOCAL_NAMES}/pause:{PAUSE_VERSION}"
BUSYBOX_VERSION = "1.35.0"  # bookworm's busybox-static 1:1.35.0-4+deb12u1
NODE_HELPER_IMAGE = f"{LOCAL_NAMES}/node-helper:{BUSYBOX_VERSION}"

# pgBackRest comes from sid (docs/development.md "Images"); the pin keeps every other package on
# the image's own suite.
SID_SOURCES = f"deb [signed-by={KEYRING}] {MIRROR} sid main\n"
SID_PIN = ("# Only what a Containerfile names as pkg/sid, and what that needs, comes from sid.\n"
           "Package: *\nPin: release n=sid\nPin-Priority: 100\n")


@dataclass(frozen=True)
class Recipe:
    name: str                                   # short name: images/<name>/Containerfile
    ref: str                                    # the reference manifests and pods name
    base: DebianBase | str                      # a Debian base, or the name of an earlier recipe
    inputs: Callable[[Path], tuple[inputs.Input, ...]]  # the build context, given the checkout
    version: str                                # org.opencontainers.image.version
    user: int                                   # the numeric uid the image runs as
    build_args: dict[str, str] = field(default_factory=dict)
    # Python requirements the build's pip installs from an index: make images serves them as
    # wheels it fetched itself (inputs.served_wheels); they are part of the content key.
    wheels: Callable[[Path], tuple[str, ...]] = lambda _repo: ()
    recipe_file: str = "Containerfile"          # images/<name>/<recipe_file>, part of the key
    base_arg: str = "BASE"                      # the build argument that names the base
    # For a recipe that is not a Containerfile: (recipe file, context with the inputs) -> the
    # folder holding the Containerfile to build.
    generate: Callable[[Path, Path], Path] | None = None
    # False for an image whose final stage is FROM scratch: no dpkg inside to list packages with.
    debian: bool = True

    def containerfile(self, repo: Path) -> Path:
        return repo / "images" / self.name / self.recipe_file


def base_pins(module: Path) -> list[str]:
    """The Ansible Operator base image's Python packages as its Pipfile.lock pins them."""
    lock = json.loads((module / OPERATOR_BASE_SOURCES / "Pipfile.lock").read_text())
    return [f"{name}{spec['version']}" for name, spec in sorted(lock["default"].items())]


def _requirements(pinned: Iterable[str]) -> inputs.Input:
    """The requirements.txt a recipe's pip installs: exactly `pinned`, one a line."""
    return inputs.text("requirements.txt", "\n".join(pinned) + "\n")


def _pools_deps(repo: Path) -> tuple[inputs.Input, ...]:
    return (inputs.dependency_wheels("wheels", repo / POOLS_LOCK),)


def _pools(repo: Path) -> tuple[inputs.Input, ...]:
    return (inputs.project_wheel("wheels", repo, PIP_WHEEL),)


def _sid() -> tuple[inputs.Input, ...]:
    return inputs.text("sid.list", SID_SOURCES), inputs.text("sid.pref", SID_PIN)


def _multigres(repo: Path) -> tuple[inputs.Input, ...]:
    return (*_sid(), inputs.binaries("bin", toolchain.multigres_dir() / "bin", MULTIGRES_COMMANDS))


def _pgctld(repo: Path) -> tuple[inputs.Input, ...]:
    return (*_sid(), inputs.file("pgctld", toolchain.multigres_dir() / "bin" / "pgctld", 0o755))


def _operator_base_wheels(repo: Path) -> tuple[str, ...]:
    # setuptools and wheel build the ansible_runner_http plugin from its source folder.
    return (*base_pins(ansible_operator.module_dir()), *BUILD_TOOLS)


def _operator_wheels(repo: Path) -> tuple[str, ...]:
    return (ansible_operator_image.ansible_core_pin(repo), *pins(repo / "meta" / "requirements.txt"))


def _operator_base(repo: Path) -> tuple[inputs.Input, ...]:
    module = ansible_operator.module_dir()
    return (inputs.file("ansible-operator", ansible_operator.binary(), 0o755),
            _requirements(base_pins(module)),
            inputs.tree("ansible_runner_http", module / OPERATOR_BASE_SOURCES / "ansible_runner_http"))


def _operator_deps(repo: Path) -> tuple[inputs.Input, ...]:
    return (_requirements(_operator_wheels(repo)),)


def _operator(repo: Path) -> tuple[inputs.Input, ...]:
    generated = ansible_operator_image.files(repo)
    return (inputs.text("requirements.txt", generated[Path("requirements.txt")]),
            inputs.collection_tarball(f"multigres-pools-{keys.RELEASE}.tar.gz", repo))


def _ee_deps_wheels(repo: Path) -> tuple[str, ...]:
    """What the execution environment keeps of what ansible-builder installs: ansible-core,
    ansible-runner, both collections' requirements and dumb-init."""
    pinned = {_project(p): p for p in pins(repo / "requirements.txt")}
    core = [line.strip() for line in (inputs.kubernetes_core_dir(repo) / "requirements.txt").read_text().splitlines()]
    return (ansible_operator_image.ansible_core_pin(repo), pinned["ansible-runner"],
            *pins(repo / "meta" / "requirements.txt"), *(pinned.get(_project(r), r) for r in core if r), EE_INIT)


def _ee_deps(repo: Path) -> tuple[inputs.Input, ...]:
    return (_requirements(_ee_deps_wheels(repo)),)


def _ee_wheels(repo: Path) -> tuple[str, ...]:
    # What ansible-builder's builder stage installs and the EE does not keep: bindep (PyYAML and
    # packaging it finds in the -deps image); the rest is installed there already.
    return (*BINDEP, *BUILD_TOOLS)


def _project(requirement: str) -> str:
    return requirement.split("==")[0].split(">")[0].split("<")[0].strip().lower()


def _ee(repo: Path) -> tuple[inputs.Input, ...]:
    return (inputs.file("ee/execution-environment.yml", repo / "images" / "execution-environment" / EE_DEFINITION),
            inputs.collection_tarball("ee/multigres-pools.tar.gz", repo),
            inputs.installed_collection("ee/kubernetes-core.tar.gz", inputs.kubernetes_core_dir(repo)))


def _ee_generate(definition: Path, context: Path) -> Path:
    """`ansible-builder create` over the definition and the two collection files beside it."""
    out = context / "build"
    builder = Path(sys.executable).with_name("ansible-builder")
    run([str(builder), "create", "-f", str(context / "ee" / definition.name), "-c", str(out),
                "--output-filename", "Containerfile"], "ansible-builder create")
    return out


def _pause(repo: Path) -> tuple[inputs.Input, ...]:
    return (inputs.file("pause.c", repo / "images" / "pause" / "pause.c"),)


def _tag(ref: str) -> str:
    return ref.rsplit(":", 1)[1]


RECIPES = (
    Recipe("pools-deps", POOLS_DEPS_IMAGE, BOOKWORM, _pools_deps, keys.RELEASE, 65532),
    Recipe("pools", keys.POOLS_IMAGE, "pools-deps", _pools, keys.RELEASE, 65532),
    Recipe("multigres", V0_1.multigres, TRIXIE, _multigres, _tag(V0_1.multigres), 65532),
    Recipe("pgctld", V0_1.pgctld, TRIXIE, _pgctld, _tag(V0_1.pgctld), 999),
    Recipe("ansible-operator-base", ansible_operator_image.BASE_IMAGE, BOOKWORM, _operator_base,
           ansible_operator.VERSION, 1001, wheels=_operator_base_wheels),
    Recipe("ansible-operator-deps", ANSIBLE_OPERATOR_DEPS_IMAGE, "ansible-operator-base", _operator_deps,
           keys.RELEASE, 1001, wheels=_operator_wheels),
    # Its own pip step runs again over the -deps image, with no index: everything is installed.
    Recipe("ansible-operator", keys.ANSIBLE_OPERATOR_IMAGE, "ansible-operator-deps", _operator, keys.RELEASE, 1001,
           build_args={"PIP_NO_INDEX": "1"}),
    Recipe("execution-environment-base", EE_BASE_IMAGE, BOOKWORM, lambda _r: (), keys.RELEASE, 0),
    Recipe("execution-environment-deps", EE_DEPS_IMAGE, "execution-environment-base", _ee_deps, keys.RELEASE, 0,
           wheels=_ee_deps_wheels),
    Recipe("execution-environment", keys.EXECUTION_ENVIRONMENT_IMAGE, "execution-environment-deps", _ee,
           keys.RELEASE, 1000, wheels=_ee_wheels, recipe_file=EE_DEFINITION, base_arg="EE_BASE_IMAGE",
           generate=_ee_generate),
    Recipe("pause", PAUSE_IMAGE, BOOKWORM, _pause, PAUSE_VERSION, 65535, debian=False),
    Recipe("node-helper", NODE_HELPER_IMAGE, BOOKWORM, lambda _r: (), BUSYBOX_VERSION, 65534,
           build_args={"BUSYBOX_VERSION": BUSYBOX_VERSION}, debian=False),
)
BY_NAME = {recipe.name: recipe for recipe in RECIPES}


def prerequisites(names: tuple[str, ...]) -> None:
    """Build the Go binaries the chosen images copy in (cached per machine: make setup builds them)."""
    if {"multigres", "pgctld"} & set(names):
        toolchain.ensure_multigres()
    if "ansible-operator-base" in names:
        ansible_operator.resolve()


def with_bases(names: tuple[str, ...], recipes: tuple[Recipe, ...] = RECIPES) -> tuple[Recipe, ...]:
    """The named recipes plus every recipe they are built FROM, in build order."""
    wanted = set(names)
    for recipe in reversed(recipes):
        if recipe.name in wanted and isinstance(recipe.base, str):
            wanted.add(recipe.base)
    return tuple(r for r in recipes if r.name in wanted)
