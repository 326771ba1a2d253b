"""The image cache on the real builder: a rebuild only when an input changed, and a failed build
names its step and leaves no image under the name it was building."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from multigres_pools.images import build as image_build
from multigres_pools.images import catalog, inputs
from multigres_pools.images.buildah import Buildah, archive_facts
from multigres_pools.images.steps import ImageBuildError

pytestmark = pytest.mark.images

REF = "localhost/multigres-pools-test/tiny:1"


def _recipe(repo: Path, containerfile: str, note: str) -> catalog.Recipe:
    folder = repo / "images" / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Containerfile").write_text(containerfile)
    return catalog.Recipe("tiny", REF, catalog.BOOKWORM, lambda _repo: (inputs.text("note", note),), "1", 65532)


GOOD = "ARG BASE\nFROM ${BASE}\nCOPY note /note\nUSER 65532:65532\n"


def _build(repo: Path, recipe: catalog.Recipe) -> image_build.Built:
    (built,) = image_build.build(("tiny",), repo, progress=lambda _line: None, recipes=(recipe,))
    return built


def test_rebuilt_only_when_an_input_changes(tmp_path: Path) -> None:
    tool = image_build.builder()
    first = _build(tmp_path, _recipe(tmp_path, GOOD, "one"))
    try:
        assert first.seconds > 0 and archive_facts(Path(first.archive)).digest == first.digest
        again = _build(tmp_path, _recipe(tmp_path, GOOD, "one"))
        assert (again.key, again.digest, again.seconds) == (first.key, first.digest, 0.0)
        changed = _build(tmp_path, _recipe(tmp_path, GOOD, "two"))
        assert changed.key != first.key and changed.seconds > 0
        # The older build is gone: its archive and its keyed image.
        assert not Path(first.archive).exists() and not tool.exists(first.local_ref)
        meta = json.loads((Path(changed.archive).parent / "image.json").read_text())
        assert meta["ref"] == REF and meta["digest"] == changed.digest
    finally:
        _forget(tool)


def test_a_failed_build_names_its_step_and_tags_nothing(tmp_path: Path) -> None:
    tool = image_build.builder()
    broken = _recipe(tmp_path, "ARG BASE\nFROM ${BASE}\nRUN echo the-reason >&2 && false\n", "x")
    try:
        with pytest.raises(ImageBuildError) as failure:
            _build(tmp_path, broken)
        message = str(failure.value)
        assert message.startswith("images: tiny: build localhost/multigres-pools/tiny:") and "the-reason" in message
        assert "full log:" in message
        assert not tool.exists(REF)
        assert not [p for p in image_build.images_dir().glob("tiny-*") if (p / "image.json").exists()]
    finally:
        _forget(tool)


def test_unknown_image_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ImageBuildError, match="unknown image nosuch; known: pools-deps, pools, multigres"):
        image_build.build(("nosuch",), tmp_path)


def _forget(tool: Buildah) -> None:
    """What these tests built, so they leave the cache as they found it."""
    log = Path("/dev/null")
    for folder in image_build.images_dir().glob("tiny-*"):
        tool.remove(f"{image_build.LOCAL_PREFIX}/tiny:{folder.name.split('-', 1)[1].split('.')[0]}", log)
        shutil.rmtree(folder, ignore_errors=True)
    tool.remove(REF, log)
