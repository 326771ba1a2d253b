"""The bad-spec corpus (tests/unit/render/spec_corpus.yaml), shared by the Python and apiserver tests."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).parent / "unit" / "render" / "spec_corpus.yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


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
