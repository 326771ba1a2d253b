"""The `kubernetes`-package client of the playground and the tests (the runtime uses the engine's
KubeClient: docs/architecture.md, "One Kubernetes client")."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def api_client(kubeconfig: str | os.PathLike[str] | None = None) -> ApiClient:
    """From `kubeconfig` when given; otherwise in-cluster, falling back to the default kubeconfig."""
    # Imported here: `kubernetes` takes a third of a second to import and not every caller needs it.
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)
    return client.ApiClient(cfg)
