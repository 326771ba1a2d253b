"""The whole program: the watches (multigres_pools.watch), the Lease, the periodic pass and the HTTP endpoints."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.request

from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState

from multigres_pools.agent.__main__ import build
from multigres_pools.dataplane.era_a import EraA
from multigres_pools.install import monitoring
from multigres_pools.playground.cluster import free_port
from tests.helpers import promql


def _wait(check, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""  # not listening yet


def test_agent_process_drains_publishes_and_serves(kube, namespace, rig_factory) -> None:
    rig = rig_factory()
    port = free_port()
    runtime = build(["--kubeconfig", str(kube.kubeconfig), "--namespace", namespace, "--http", f"127.0.0.1:{port}",
                     "--lease-namespace", namespace, "--identity", "agent-a", "--poll-interval", "0.5"],
                    dataplane=EraA(dial_host=lambda host: "127.0.0.1", rpc_timeout=2))
    thread = threading.Thread(target=runtime.run, daemon=True)
    thread.start()
    try:
        assert _wait(lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200)
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        # Roles appear from the periodic pass once this replica holds the Lease.
        assert _wait(lambda: rig.role(rig.names[0]) == "PRIMARY")
        victim = rig.names[2]
        rig.request_drain(victim)
        assert _wait(lambda: rig.state(victim) == DrainState.READY_FOR_DELETION)
        assert not rig.in_sync_list(victim)
        metrics = _get(f"http://127.0.0.1:{port}/metrics")[1]
        assert "multigres_pools_agent_drain_state_duration_seconds_bucket" in metrics
        assert "multigres_pools_agent_role_publish_lag_seconds_count" in metrics
        assert "multigres_pools_agent_leader 1.0" in metrics and "multigres_pools_build_info{" in metrics
        # The alerts' agent metrics, as a real scrape of the running program shows them.
        wanted = promql.alert_metrics(monitoring.ALERTS, "multigres_pools_agent_")
        assert wanted and wanted <= promql.exported_series(metrics), wanted - promql.exported_series(metrics)
        assert f'multigres_pools_agent_drains_completed_total{{namespace="{namespace}",shard=""}} 1.0' in metrics
    finally:
        runtime.stop_flag.set()
        thread.join(30)
    assert not thread.is_alive()


def test_agent_process_exits_cleanly_on_sigterm(kube, namespace) -> None:
    """What the kubelet does on pod deletion: SIGTERM, then SIGKILL after the 30 s grace period.
    The agent must be gone before that (kopf's stop-flag waiter once kept it alive forever)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "multigres_pools.agent", "--standalone", "--kubeconfig", str(kube.kubeconfig),
         "--namespace", namespace, "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert _wait(lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200), "agent never became ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
