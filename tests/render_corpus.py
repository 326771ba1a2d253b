"""The bad-spec corpus (tests/unit/render/spec_corpus.yaml), shared by the Python and apiserver tests."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.merge_patch import merge_patch

CORPUS = Path(__file__).parent / "unit" / "render" / "spec_corpus.yaml"
# Merge into a patch to render a shard as Multigres era A (the default is v0.1.0).
ERA_A = {"multigres": {"version": "d782aa06"}}


@functools.cache
def load() -> dict[str, Any]:
    return yaml.safe_load(CORPUS.read_text())  # callers get copies via merge_patch/spec


def cases(section: str) -> list[Any]:
    import pytest

    return [pytest.param(case, id=case["name"]) for case in load()[section]]


def spec(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    return merge_patch(load()["base"], patch or {})


def document(name: str, namespace: str, spec_dict: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "pools.multigres.com/v1alpha1",
        "kind": "MultigresShard",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec_dict,
    }
