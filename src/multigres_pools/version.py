"""The installed package's version: `multigres-pools --version` and the `multigres_pools_build_info` gauge."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI asks for the version without the agent's and operator's dependencies
    from prometheus_client import CollectorRegistry, Gauge

DISTRIBUTION = "multigres-pools"
BUILD_INFO = "multigres_pools_build_info"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def register_build_info(registry: CollectorRegistry, component: str) -> Gauge:
    """Always 1; the labels say what runs (joins onto other series with `* on(instance) group_left`)."""
    from prometheus_client import Gauge

    gauge = Gauge(BUILD_INFO, "Version of the running multigres-pools program (always 1).",
                  ["version", "component", "python_version"], registry=registry)
    gauge.labels(version(), component, platform.python_version()).set(1)
    return gauge
