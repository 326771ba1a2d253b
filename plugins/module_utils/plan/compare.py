"""Is the desired content already present in a live object?

Server-side apply only changes the fields we send, so "present" means: every field of the desired
manifest has the same value in the live object; fields the server or other managers added are
ignored. This is how a pass with nothing to do makes no write request at all.
"""

from __future__ import annotations

import base64
from typing import Any

from ..core.manifest import Manifest
from ..spec import quantity


def _same_scalar(live: Any, want: Any) -> bool:
    if live == want and type(live) is type(want):
        return True
    if isinstance(want, bool) or isinstance(live, bool):
        return False
    if isinstance(want, int | float) and isinstance(live, int | float):
        return live == want
    # "0.5" and "500m", "1024Mi" and "1Gi": the API server normalises quantities.
    if isinstance(want, str | int) and isinstance(live, str | int):
        a, b = quantity.try_parse(live), quantity.try_parse(want)
        return a is not None and a == b and isinstance(want, str) and isinstance(live, str)
    return False


def contains(live: Any, want: Any) -> bool:
    """True when `want` is a subset of `live` (dicts by key, lists element by element)."""
    return first_difference(live, want) is None


def _secret_as_data(want: Manifest) -> Manifest:
    """Secrets read back with base64 `data` only; compare `stringData` in that form."""
    string_data = want.get("stringData")
    if not string_data:
        return want
    data = dict(want.get("data") or {})
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    out = {k: v for k, v in want.items() if k != "stringData"}
    out["data"] = data
    return out


def difference(live: Manifest | None, want: Manifest) -> str | None:
    """Why server-side applying `want` would change `live` (the first differing field), or None."""
    if live is None:
        return "missing"
    if want.get("kind") == "Secret":
        want = _secret_as_data(want)
    body = {k: v for k, v in want.items() if k not in ("apiVersion", "kind", "status")}
    return first_difference(live, body)


def first_difference(live: Any, want: Any, path: str = "") -> str | None:
    """The path of the first desired field that the live object lacks or holds differently."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return (path or ".") if want else None
        for key, value in want.items():
            sub = f"{path}.{key}" if path else key
            if value is None:
                if live.get(key) is not None:
                    return sub
                continue
            if key not in live:
                return sub
            found = first_difference(live[key], value, sub)
            if found:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(live, list) or len(live) != len(want):
            return path
        for i, (a, b) in enumerate(zip(live, want, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if _same_scalar(live, want) else path
