"""Observed state handed from one reader to another: the operator decides from its watch caches,
records the list results its decision read, and passes them to the playbook, which replays them
instead of listing again (see docs/architecture.md, "The operator's fast path").

A snapshot is a record of list requests and their answers, keyed by the exact request
(apiVersion, kind, namespace, selector, metadata-only). A pass that asks for anything else (the
spec changed meanwhile, so the selector did) reads the cluster as usual: replay can only save
requests, never change what a pass sees beyond the age of the snapshot. Writes always go to the
live client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.manifest import Manifest

FORMAT = 1
# A snapshot older than this is ignored: the pass lists live instead.
MAX_AGE = 60.0


class Reader(Protocol):
    """What observe and the spec loader read through: KubeClient, a cache view or a snapshot."""

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Manifest | None: ...

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str = "", *,
             metadata_only: bool = False) -> list[Manifest]: ...


class SelectorError(ValueError):
    """A selector this module does not evaluate (set-based); callers fall back to the server."""


def parse_selector(selector: str) -> list[tuple[str, str, str | None]]:
    """`a=b,c!=d,e` -> [(key, op, value)] with op in {"=", "!=", "exists"}; set-based terms raise."""
    terms: list[tuple[str, str, str | None]] = []
    for raw in filter(None, (part.strip() for part in selector.split(","))):
        if " in " in raw or " notin " in raw or raw.startswith("!") or "(" in raw:
            raise SelectorError(f"set-based selector term {raw!r}")
        if "!=" in raw:
            key, value = raw.split("!=", 1)
            terms.append((key.strip(), "!=", value.strip()))
        elif "==" in raw or "=" in raw:
            key, value = raw.replace("==", "=", 1).split("=", 1)
            terms.append((key.strip(), "=", value.strip()))
        else:
            terms.append((raw, "exists", None))
    return terms


def matches(labels: Mapping[str, str], terms: Iterable[tuple[str, str, str | None]]) -> bool:
    for key, op, value in terms:
        if op == "exists":
            if key not in labels:
                return False
        elif op == "=":
            if labels.get(key) != value:
                return False
        elif labels.get(key) == value:  # "!=": an absent label matches, as on the server
            return False
    return True


def request_key(api_version: str, kind: str, namespace: str | None, selector: str, metadata_only: bool) -> str:
    return json.dumps([api_version, kind, namespace or "", selector, bool(metadata_only)])


@dataclass
class Recorder:
    """Wraps a reader and keeps every list answer it gave, to be written out as a snapshot."""

    inner: Reader
    lists: dict[str, list[Manifest]] = field(default_factory=dict)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Manifest | None:
        return self.inner.get(api_version, kind, namespace, name)

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str = "", *,
             metadata_only: bool = False) -> list[Manifest]:
        items = self.inner.list(api_version, kind, namespace, selector, metadata_only=metadata_only)
        self.lists[request_key(api_version, kind, namespace, selector, metadata_only)] = items
        return items

    def document(self, now: float | None = None) -> Manifest:
        return {"format": FORMAT, "taken": time.time() if now is None else now, "lists": self.lists}

    def write(self, path: Path) -> Path:
        """Atomically (rename), so a reader never sees half a file."""
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.document(), separators=(",", ":")))
        tmp.replace(path)
        return path


@dataclass
class Replay:
    """Answers list requests from a snapshot; everything else goes to the live client."""

    live: Reader
    lists: Mapping[str, list[Manifest]]
    replayed: int = 0

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Manifest | None:
        return self.live.get(api_version, kind, namespace, name)

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str = "", *,
             metadata_only: bool = False) -> list[Manifest]:
        found = self.lists.get(request_key(api_version, kind, namespace, selector, metadata_only))
        if found is None:
            return self.live.list(api_version, kind, namespace, selector, metadata_only=metadata_only)
        self.replayed += 1
        return found


def load(path: str | Path, now: float | None = None, max_age: float = MAX_AGE) -> Mapping[str, list[Manifest]] | None:
    """The recorded lists of a snapshot file; None if it is missing, of another format or too old
    (the pass then lists live, exactly as without a snapshot)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("lists"), dict):
        return None
    age = (time.time() if now is None else now) - float(doc.get("taken") or 0)
    if age > max_age or age < -max_age:
        return None
    lists: Mapping[str, list[Manifest]] = doc["lists"]  # our FORMAT, checked above
    return lists
