"""The agent's settle passes: which pods are in motion, the periodic loop's beat, and a shard that
leaves the settle set once its pods have settled (settling.py)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent import settling
from multigres_pools.agent.__main__ import build
from multigres_pools.agent.kube import now_rfc3339

NOW = 1_800_000_000.0
GATE = {"readinessGates": [{"conditionType": keys.POD_READINESS_GATE}]}


def _pod(age: float = 10.0, *, gate: str | None = None, containers: str = "True", drain: str | None = None,
         drain_age: float = 5.0, deleting: bool = False, spec: dict[str, Any] | None = None,
         role: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "creationTimestamp": now_rfc3339(NOW - age),
                            "annotations": {}, "labels": {}}
    if drain:
        meta["annotations"] = {keys.ANN_DRAIN_STATE: drain, keys.ANN_DRAIN_STATE_SINCE: now_rfc3339(NOW - drain_age),
                               keys.ANN_DRAIN_REQUESTED_AT: now_rfc3339(NOW - drain_age)}
    if deleting:
        meta["deletionTimestamp"] = now_rfc3339(NOW)
    if role:
        meta["labels"][keys.LABEL_ROLE] = role
    conditions = [{"type": "ContainersReady", "status": containers}]
    if gate is not None:
        conditions.append({"type": keys.POD_READINESS_GATE, "status": gate})
    return {"metadata": meta, "spec": GATE if spec is None else spec, "status": {"conditions": conditions}}


@pytest.mark.parametrize(("pod", "moving"), [
    (_pod(), True),  # running, gated, no verdict yet
    (_pod(gate="False"), True),  # held (a writable standby, or not yet streaming)
    (_pod(gate="True"), False),  # settled
    (_pod(age=300), False),  # past the window: the periodic pass is enough
    (_pod(containers="False"), False),  # still starting: its start is an event
    (_pod(deleting=True), False),
    (_pod(spec={}), True),  # ungated (era A) without a role label
    (_pod(spec={}, role="REPLICA"), False),
    (_pod(age=300, gate="True", drain="draining"), True),  # a drain under way, whatever the pod's age
    (_pod(age=300, gate="True", drain="requested", drain_age=500), False),  # a drain waiting long (a backup)
    (_pod(age=300, gate="True", drain="ready-for-deletion"), False),  # the engine's delete is an event
])
def test_what_is_in_motion(pod: dict[str, Any], moving: bool) -> None:
    assert settling.in_motion(pod, NOW) is moving


def _beat(poll: float, settle: float, steps: int) -> list[bool]:
    clock = [0.0]

    def wait(seconds: float) -> bool:
        clock[0] += seconds
        return clock[0] > steps * min(poll, settle or poll) + 1e-9

    return list(settling.rounds(poll, settle, wait, lambda: clock[0]))


def test_the_loop_runs_settle_passes_between_full_rounds() -> None:
    assert _beat(5, 1, 10) == [False, False, False, False, True] * 2
    assert _beat(5, 0, 3) == [True] * 3  # off: only the periodic rounds
    assert _beat(1, 1, 3) == [True] * 3  # nothing between rounds a second apart
    assert _beat(2, 5, 3) == [True] * 3  # a settle interval longer than the poll adds nothing


def _kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    return str(path)


def test_a_shard_gets_settle_passes_until_its_pods_settle(tmp_path: Path) -> None:
    agent = build(["--standalone", "--kubeconfig", _kubeconfig(tmp_path)]).agent
    agent.ctx.clock = lambda: NOW
    pods = {"moving": [_pod()], "settled": [_pod(gate="True")]}
    passes: list[str] = []

    def one_pass(ref: Any) -> list[Any]:
        passes.append(ref[0])
        return [SimpleNamespace(pods=pods[ref[0]])]

    agent._reconcile = one_pass  # type: ignore[method-assign]  # the data plane's part is not under test
    moving, settled = ("moving", ()), ("settled", ())
    agent.reconcile(moving)
    agent.reconcile(settled)
    agent.settle()
    assert passes == ["moving", "settled", "moving"]
    pods["moving"] = [_pod(gate="True")]  # its verdict came
    agent.settle()
    agent.settle()
    assert passes == ["moving", "settled", "moving", "moving"]


def _until(check: Any) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_burst_of_events_costs_one_pass_behind_the_running_one(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Events that arrive while a shard's pass runs queue one pass, which reads everything afresh when
    it starts; an event after that pass began queues the next."""
    agent = build(["--standalone", "--kubeconfig", _kubeconfig(tmp_path)]).agent
    agent.ctx.clock = lambda: NOW
    caplog.set_level(logging.DEBUG)
    ref = ("ns", ())
    started = [threading.Event() for _ in range(3)]
    release = [threading.Event() for _ in range(3)]
    passes: list[int] = []

    def one_pass(_ref: Any) -> list[Any]:
        n = len(passes)
        passes.append(n)
        started[n].set()
        assert release[n].wait(10)
        return []

    agent._reconcile = one_pass  # type: ignore[method-assign]  # the data plane's part is not under test

    def event() -> threading.Thread:
        thread = threading.Thread(target=agent.reconcile, args=(ref,))
        thread.start()
        return thread

    threads = [event()]
    assert started[0].wait(10)
    threads += [event() for _ in range(3)]  # a burst while the first pass runs
    _until(lambda: ref in agent._waiting)
    _until(lambda: sum(t.is_alive() for t in threads) == 2)  # the others returned: the waiting pass covers them
    time.sleep(0.05)  # what the waiting pass's log line reports as its wait
    release[0].set()
    assert started[1].wait(10)
    threads.append(event())  # after the second pass began: it may have read too early
    _until(lambda: ref in agent._waiting)
    assert not started[2].is_set()
    release[1].set()
    assert started[2].wait(10)
    release[2].set()
    for thread in threads:
        thread.join(10)
    assert passes == [0, 1, 2]
    logged = [r for r in caplog.records if r.getMessage() == "shard pass"]
    assert len(logged) == 3 and logged[1].waited_s >= 0.05 and all(r.took_s >= 0 for r in logged)  # type: ignore[attr-defined]


def test_the_intervals_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag, value, problem in (("--settle-interval", "-1", "is not a number of seconds, 0 or more"),
                                 ("--poll-interval", "0", "is not a positive number of seconds")):
        with pytest.raises(SystemExit):
            build(["--standalone", "--kubeconfig", _kubeconfig(tmp_path), flag, value])
        assert f"{flag}: {float(value)} {problem}" in capsys.readouterr().err
