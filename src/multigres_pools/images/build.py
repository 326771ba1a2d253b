"""The content-keyed image cache: an image is rebuilt only when one of its inputs changed (its
Containerfile, its base, a build argument or a context input), and a build either completes or
leaves nothing behind under the image's name.

Layout under ~/.cache/multigres-pools/images/: `debian/<suite>-<key>.tar` (the slim bases),
`<image>-<key>/` holding `image.tar` (an OCI archive naming the image by its real reference),
`image.json` (what `make images` prints; written last, so its presence means complete),
`packages.txt` (the Debian packages inside) and `build.log`; `buildah/` is buildah's own storage.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from multigres_pools.images import catalog, inputs
from multigres_pools.images.buildah import Buildah, archive_facts
from multigres_pools.images.debian import DebianBase, apt_options
from multigres_pools.images.steps import ImageBuildError, digest
from multigres_pools.playground.binaries import cache_root

Progress = Callable[[str], None]
LOCAL_PREFIX = catalog.LOCAL_NAMES  # buildah-only names: bases and keyed builds


@dataclass(frozen=True)
class Built:
    name: str
    ref: str
    key: str
    digest: str
    compressed_bytes: int
    archive: str
    user: int
    seconds: float  # 0 when it came from the cache

    @property
    def local_ref(self) -> str:
        return f"{LOCAL_PREFIX}/{self.name}:{self.key}"

    def line(self) -> str:
        how = f"built in {self.seconds:.0f}s" if self.seconds else "cached"
        return (f"{self.name:<26} {self.ref:<53} {self.digest[:19]}  {self.compressed_bytes / 1e6:7.1f} MB  "
                f"{how:<14} {self.archive}")


def images_dir() -> Path:
    return cache_root() / "images"


def builder() -> Buildah:
    return Buildah(images_dir() / "buildah" / "root", images_dir() / "buildah" / "run")


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """One build at a time per machine (test processes may ask at once); the others wait, then
    find the result in the cache."""
    images_dir().mkdir(parents=True, exist_ok=True)
    with (images_dir() / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _debian_base(base: DebianBase, tool: Buildah, progress: Progress) -> tuple[str, str]:
    """The slim base as a buildah image: (local reference, key)."""
    key = base.key()
    ref = f"{LOCAL_PREFIX}/debian:{base.suite}-slim-{key}"
    if tool.exists(ref):
        return ref, key
    folder = images_dir() / "debian"
    folder.mkdir(parents=True, exist_ok=True)
    tar, log = folder / f"{base.suite}-{key}.tar", folder / f"{base.suite}-{key}.log"
    if not tar.is_file():
        progress(f"images: debian {base.suite}-slim: mmdebstrap (about a minute) ...")
        partial = tar.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        base.make(partial, log)
        partial.replace(tar)
    tool.import_rootfs(tar, ref, log)
    return ref, key


def _key(recipe: catalog.Recipe, repo: Path, base_key: str, build_args: dict[str, str],
         items: tuple[inputs.Input, ...]) -> str:
    parts: list[bytes | str] = [recipe.name, recipe.ref, recipe.containerfile(repo).read_bytes(), base_key,
                                *recipe.wheels(repo)]
    parts += [f"{k}={v}" for k, v in sorted(build_args.items())]
    parts += [p for item in items for p in (item.name, item.key)]
    return digest(parts)


def _load(folder: Path) -> Built | None:
    meta = folder / "image.json"
    if not meta.is_file():
        return None
    return Built(**{**json.loads(meta.read_text()), "seconds": 0.0})


def _build_one(recipe: catalog.Recipe, repo: Path, base_ref: str, key: str, build_args: dict[str, str],
               items: tuple[inputs.Input, ...], tool: Buildah, progress: Progress) -> Built:
    final = images_dir() / f"{recipe.name}-{key}"
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    log = partial / "build.log"
    local_ref = f"{LOCAL_PREFIX}/{recipe.name}:{key}"
    started = time.monotonic()
    progress(f"images: {recipe.name}: building {recipe.ref} (log: {final / 'build.log'}) ...")
    try:
        with (tempfile.TemporaryDirectory(prefix=f"image-{recipe.name}-") as tmp,
              inputs.served_wheels(recipe.wheels(repo), progress) as pip_args):
            context = Path(tmp)
            inputs.materialise(items, context)
            containerfile = recipe.containerfile(repo)
            if recipe.generate is not None:
                context = recipe.generate(containerfile, context)
                containerfile = context / "Containerfile"
            tool.bud(containerfile, context, local_ref, {**build_args, **pip_args, recipe.base_arg: base_ref}, log)
        archive = partial / "image.tar"
        tool.push_archive(local_ref, archive, recipe.ref, log)
        (partial / "packages.txt").write_text(tool.packages(local_ref, log) if recipe.debian else "")
        facts = archive_facts(archive)
    except BaseException as exc:
        # Nothing half-built keeps a name: the keyed build image goes, the real name was never set.
        with contextlib.suppress(ImageBuildError):
            tool.remove(local_ref, log)
        if isinstance(exc, ImageBuildError):
            raise ImageBuildError(f"images: {recipe.name}: {exc}\nfull log: {log}") from exc
        raise
    built = Built(recipe.name, recipe.ref, key, facts.digest, facts.compressed_bytes, str(final / "image.tar"),
                  recipe.user, round(time.monotonic() - started, 1))
    (partial / "image.json").write_text(json.dumps({k: v for k, v in asdict(built).items() if k != "seconds"},
                                                   indent=2) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    partial.replace(final)
    tool.tag(local_ref, recipe.ref, final / "build.log")
    return built


def _prune(recipe: catalog.Recipe, keep: str, tool: Buildah) -> None:
    """Older builds of the same image (their inputs changed since): archive and buildah image."""
    for old in images_dir().glob(f"{recipe.name}-*"):
        key = old.name.removeprefix(f"{recipe.name}-").removesuffix(".partial")
        if old.is_dir() and key != keep and len(key) == len(keep):
            with contextlib.suppress(ImageBuildError):
                tool.remove(f"{LOCAL_PREFIX}/{recipe.name}:{key}", old / "prune.log")
            shutil.rmtree(old, ignore_errors=True)


def build(names: tuple[str, ...], repo: Path, progress: Progress = print,
          recipes: tuple[catalog.Recipe, ...] = catalog.RECIPES) -> list[Built]:
    """Build (or find in the cache) the named images and the images they are built FROM."""
    known = [r.name for r in recipes]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ImageBuildError(f"unknown image {', '.join(unknown)}; known: {', '.join(known)}")
    order = catalog.with_bases(names, recipes)
    catalog.prerequisites(tuple(r.name for r in order))
    tool = builder()
    done: dict[str, Built] = {}
    common = {"APT_OPTIONS": " ".join(apt_options())}
    with _lock():
        for recipe in order:
            name = recipe.name
            if isinstance(recipe.base, DebianBase):
                base_ref, base_key = _debian_base(recipe.base, tool, progress)
            else:
                parent = done[recipe.base]
                base_ref, base_key = parent.local_ref, parent.key
            build_args = {**common, "VERSION": recipe.version, **recipe.build_args}
            items = recipe.inputs(repo)
            key = _key(recipe, repo, base_key, build_args, items)
            cached = _load(images_dir() / f"{name}-{key}")
            if cached is not None and tool.exists(cached.local_ref):
                done[name] = cached
                continue
            done[name] = _build_one(recipe, repo, base_ref, key, build_args, items, tool, progress)
            _prune(recipe, key, tool)
    return [done[r.name] for r in order]
