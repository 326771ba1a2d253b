"""Every Kubernetes call of the agent is bounded by `--kube-timeout`: against an API server that
accepts connections and never answers, a call gives up and the pass ends with a logged warning
(no traceback), to be retried; the agent itself keeps going."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from multigres_pools.agent.__main__ import build
from multigres_pools.agent.kube import KubeUnavailable

TIMEOUT_S = 0.2  # against a port that never answers, any timeout fires: short keeps the test quick
DEADLINE_S = 60.0  # generous: a hang is what fails


def _kubeconfig(tmp_path: Path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return str(path)


def _finishes(fn) -> object:
    """fn's result or exception, failing the test if it is still running after DEADLINE_S."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed back to the test
            out["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), f"still waiting after {DEADLINE_S}s: the call has no timeout"
    return out["value"]


@pytest.fixture
def agent_runtime(tmp_path, silent_port):
    return build(["--standalone", "--kubeconfig", _kubeconfig(tmp_path, silent_port),
                  "--kube-timeout", str(TIMEOUT_S)])


def test_every_kind_of_call_times_out(agent_runtime) -> None:
    kube = agent_runtime.agent.ctx.kube
    assert kube.request_timeout == TIMEOUT_S
    pod = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "1"}}
    for call in (lambda: kube.get_pod("ns", "p"), lambda: kube.list_pool_pods("ns", {}),
                 lambda: kube.get_shard("ns", "s"), lambda: kube.patch_pod_meta(pod, {"a": "b"}),
                 lambda: kube.set_pod_condition(pod, "T", "True", "R", "m"),
                 lambda: kube.patch_shard_annotations(pod, {"a": "b"})):
        assert isinstance(_finishes(call), KubeUnavailable)
    assert _finishes(lambda: kube.event(pod, "Reason", "message")) is None  # best effort: swallowed


def test_a_timed_out_pass_is_a_warning_and_is_retried(agent_runtime, caplog) -> None:
    agent = agent_runtime.agent
    caplog.set_level(logging.WARNING, logger="multigres_pools.agent")
    ref = ("ns", (("multigres.com/cluster", "c"),))
    for _ in range(2):  # the same pass again: still no hang, still no traceback
        assert _finishes(lambda: agent.reconcile(ref)) == []
    assert agent.last_error.startswith("KubeUnavailable: ")
    agent._crs[("ns", "s")] = 0.0
    assert _finishes(agent.tick) is None  # the periodic round ends quietly too
    warnings = [r for r in caplog.records if "Kubernetes API unavailable" in r.getMessage()]
    assert len(warnings) >= 3 and not any(r.exc_info for r in caplog.records)


def test_the_flag_refuses_a_non_positive_timeout(tmp_path, silent_port, capsys) -> None:
    with pytest.raises(SystemExit):
        build(["--kubeconfig", _kubeconfig(tmp_path, silent_port), "--kube-timeout", "0"])
    assert "--kube-timeout: 0.0 is not a positive number of seconds" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value"), [("--stall-after", "-1"), ("--topology-stall-after", "inf")])
def test_the_stall_thresholds_refuse_negative_and_infinite_values(tmp_path, silent_port, capsys, flag, value) -> None:
    with pytest.raises(SystemExit):
        build(["--kubeconfig", _kubeconfig(tmp_path, silent_port), flag, value])
    assert f"{flag}: {float(value)} is not a number of seconds, 0 or more" in capsys.readouterr().err
