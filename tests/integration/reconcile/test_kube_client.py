"""Our Kubernetes client against the real apiserver."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.cluster


def test_one_client_shared_by_threads_answers_every_request(kube_client, namespace):  # type: ignore[no-untyped-def]
    # `multigres-pools status` resolves pod addresses through one client from a thread pool; interleaved
    # requests on its one connection used to read each other's answers or a closed socket.
    client = kube_client

    def read(_: int) -> str:
        return str((client.get("v1", "Namespace", None, namespace) or {})["metadata"]["name"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        names = list(pool.map(read, range(200)))
    assert names == [namespace] * 200
    assert client.counts["get"] == 200
