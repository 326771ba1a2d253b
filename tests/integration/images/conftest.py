"""The images `make images` builds (cached by content, so this is quick after `make images`) and a
private containerd that has them loaded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.images import catalog
from multigres_pools.images.build import Built, build
from multigres_pools.playground.containerd import Containerd
from tests.helpers.collection import REPO


@pytest.fixture(scope="session")
def built() -> dict[str, Built]:
    return {item.name: item for item in build(tuple(catalog.BY_NAME), REPO)}


@pytest.fixture(scope="session")
def ctrd(built: dict[str, Built]) -> Iterator[Containerd]:
    with Containerd.started() as ctrd:
        for item in built.values():
            ctrd.load(Path(item.archive))
        yield ctrd
