"""The one type of a Kubernetes object as the engine handles it: a JSON object, as the API server
sends it and as the renderer builds it."""

from __future__ import annotations

from typing import Any

Manifest = dict[str, Any]
