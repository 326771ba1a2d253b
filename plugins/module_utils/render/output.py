"""Byte-stable YAML for rendered folders: sorted keys, block style, literal blocks for multi-line text.

Every writer (CLI, Ansible role, ArgoCD plugin) goes through `dump`, so the same input gives the
same bytes whatever the Python hash seed, and a folder diff shows only real changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..core.manifest import Manifest


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # shared sub-objects are written out in full: no &anchors in manifests


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=4096)


def dump_all(objects: Iterable[Any]) -> str:
    return "".join(f"---\n{dump(obj)}" for obj in objects)


def file_name(obj: Manifest) -> str:
    """`<kind>-<name>.yaml`, lower case: unique within one namespace for the kinds we render."""
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def kustomization(resources: Iterable[str], namespace: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(resources),  # in apply order: tools that apply the list one by one rely on it
    }
    if namespace:
        out["namespace"] = namespace
    return out


def folder(objects: Iterable[Manifest], prefix: str = "", namespace: str | None = None) -> dict[str, str]:
    """A kustomize-ready folder as {relative path: text}: one object per file plus kustomization.yaml."""
    files = {f"{prefix}{file_name(obj)}": dump(obj) for obj in objects}
    names = [path.removeprefix(prefix) for path in files]
    if len(names) != len(set(names)):
        raise ValueError("two objects share a kind and name; refusing to overwrite one with the other")
    files[f"{prefix}kustomization.yaml"] = dump(kustomization(names, namespace))
    return files


def merge_folders(*folders: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for files in folders:
        clash = out.keys() & files.keys()
        if clash:
            raise ValueError(f"two renders write the same file: {sorted(clash)}")
        out.update(files)
    return dict(sorted(out.items()))


def write_folder(files: Mapping[str, str], out: str | Path, *, check: bool = False) -> list[str]:
    """Make `out` hold exactly `files` (stale *.yaml files are removed); returns what changed.

    With check=True nothing is touched: the list says what a real run would change.
    """
    root = Path(out)
    changed = []
    for rel, text in files.items():
        target = root / rel
        if not target.is_file() or target.read_text() != text:
            changed.append(rel)
            if not check:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
    stale = sorted(p for p in root.rglob("*.yaml") if p.relative_to(root).as_posix() not in files) \
        if root.is_dir() else []
    for path in stale:
        changed.append(path.relative_to(root).as_posix())
        if not check:
            path.unlink()
    return sorted(changed)
