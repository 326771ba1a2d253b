"""A deposed operator writes nothing: the leader is frozen (SIGSTOP on its whole process tree, as a
frozen container or a paused VM would be) in the middle of a playbook run that keeps writing, past
the lease duration; the other instance takes over; the old leader is resumed and must not write one
more time before it steps down.

The playbook is the test double of tests/unit/operator/playbook: for shard `writer` its task adds a
key `<operator identity>.<n>` to ConfigMap `writes` every 0.2 s (field manager: the identity), so
every write of each instance is counted on the server."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from multigres_pools.operator import proctree
from multigres_pools.playground.localstack import http_get, wait_for

from .test_operator_process import LEASE, lease_name, operator, operator_kubeconfig, shard  # noqa: F401  (fixtures)

pytestmark = pytest.mark.cluster
# Short, valid timings so the takeover happens within seconds (defaults: 15/10/2).
TIMING = ("--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1")


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def freeze(root: int) -> list[int]:
    """SIGSTOP the whole tree; again until no new process appeared (one could fork meanwhile)."""
    frozen: list[int] = []
    while new := [p for p in proctree.tree([root]) if p not in frozen]:
        signal_all(new, signal.SIGSTOP)
        frozen += new
    return frozen


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def writes(kube_client, namespace: str, who: str) -> set[str]:  # type: ignore[no-untyped-def]
    data = (kube_client.get("v1", "ConfigMap", namespace, "writes") or {}).get("data") or {}
    return {k for k in data if k.startswith(f"{who}.")}


def holder(kube_client, namespace: str) -> str | None:  # type: ignore[no-untyped-def]
    return ((kube_client.get(*LEASE, lease_name(namespace)) or {}).get("spec") or {}).get(
        "holderIdentity")


def test_a_deposed_operator_writes_nothing(operator_kubeconfig, namespace, kube_client, tmp_path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    kube_client.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "writes", "namespace": namespace},
                       "data": {}}, "test")
    first, port1 = operator(operator_kubeconfig, namespace, tmp_path, "op-1", *TIMING)
    frozen: list[int] = []
    try:
        wait_for(lambda: http_get(f"http://127.0.0.1:{port1}/readyz")[0] == 200, 60, "op-1 leading")
        second, port2 = operator(operator_kubeconfig, namespace, tmp_path, "op-2", *TIMING)
        try:
            wait_for(lambda: http_get(f"http://127.0.0.1:{port2}/healthz")[0] == 200, 60, "op-2 alive")
            assert http_get(f"http://127.0.0.1:{port2}/readyz")[0] == 503  # a standby
            shard(kube_client, namespace, "writer")
            wait_for(lambda: len(writes(kube_client, namespace, "op-1")) >= 3, 90, "op-1's run writing")
            assert not writes(kube_client, namespace, "op-2")  # the standby does nothing

            frozen = freeze(first.pid or 0)
            wait_for(lambda: holder(kube_client, namespace) == "op-2", 60, "op-2 taking the Lease over")
            wait_for(lambda: len(writes(kube_client, namespace, "op-2")) >= 3, 90, "op-2's run writing")
            before = writes(kube_client, namespace, "op-1")

            signal_all(frozen, signal.SIGCONT)
            code = first.popen.wait(60) if first.popen else None
            assert code == 1, first.tail()  # stepped down: a restart would run as a candidate
            # Every process of the old leader's tree ended (its runs were killed, not left behind).
            wait_for(lambda: not any(alive(p) for p in frozen), 30, "the old leader's processes gone")
            assert writes(kube_client, namespace, "op-1") == before, "the deposed leader wrote"
            log = first.log.read_text()
            assert log.count("lost leadership") == 1, log[-4000:]
            assert "stepped down" in log and "Traceback" not in log, log[-4000:]
            # The new leader goes on writing, and is still the holder.
            after = len(writes(kube_client, namespace, "op-2"))
            wait_for(lambda: len(writes(kube_client, namespace, "op-2")) > after, 30, "op-2 still writing")
            assert holder(kube_client, namespace) == "op-2"
            _, metrics = http_get(f"http://127.0.0.1:{port2}/metrics")
            assert 'multigres_pools_operator_leadership_changes_total{change="acquired"} 1.0' in metrics
            assert "multigres_pools_operator_leader 1.0" in metrics
        finally:
            kube_client.merge_patch("v1", "ConfigMap", namespace, "writes", {"data": {"stop": "1"}},
                                    field_manager="test")
            assert second.stop() == 0, second.tail()
    finally:
        signal_all(frozen, signal.SIGCONT)
        first.stop()
        signal_all([p for p in frozen if alive(p)], signal.SIGKILL)
