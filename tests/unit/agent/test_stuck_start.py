"""The agent marks a pod whose PostgreSQL has been down for longer than --stuck-start-after
(agent/stuck_start.py), from the same round of v0.1.0 Status calls that names the leader: a start
that hangs (it says since when) or a PostgreSQL that fails every start (since the agent first saw it
down); it takes the mark away once PostgreSQL answers again."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent.__main__ import build
from multigres_pools.agent.context import Context
from multigres_pools.agent.stuck_start import down_since, next_mark, publish_stuck_starts
from multigres_pools.dataplane.base import Leadership, Pooler, PoolerId
from multigres_pools.dataplane.v0_1 import pick_leadership
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd

NOW = 1795773600.0  # 2026-11-27T10:00:00Z
AFTER = 60.0
B = PoolerId("zone1", "b")


def test_marked_once_past_the_threshold_with_the_time_the_start_began() -> None:
    assert next_mark(None, AFTER - 1, running=False, now=NOW, after_s=AFTER) is None
    assert next_mark(None, 185.0, running=False, now=NOW, after_s=AFTER) == "2026-11-27T09:56:55Z"
    assert next_mark("2026-11-27T09:56:55Z", 190.0, running=False, now=NOW + 5, after_s=AFTER) is None


def test_unmarked_only_when_postgres_answers_again() -> None:
    marked = "2026-11-27T09:56:55Z"
    assert next_mark(marked, None, running=False, now=NOW, after_s=AFTER) is None  # no answer: kept
    assert next_mark(marked, None, running=True, now=NOW, after_s=AFTER) == ""
    assert next_mark(None, None, running=True, now=NOW, after_s=AFTER) is None


def _status(seconds: int, running: bool = False) -> mpd.StatusResponse:
    status = mpd.Status(postgres_status=mpd.POSTGRES_STATUS_UNKNOWN, postgres_action=mpd.POSTGRES_ACTION_STARTING,
                        postgres_running=running)
    status.postgres_action_duration.FromSeconds(seconds)
    return mpd.StatusResponse(status=status)


def test_the_status_round_says_which_pooler_starts_a_dead_postgres_and_for_how_long() -> None:
    a, b = (Pooler(PoolerId("zone1", n), keys.Role.REPLICA, f"{n}.hl", 1, "postgres", "default", "0-inf", f"/k/{n}")
            for n in ("a", "b"))
    round_ = pick_leadership([(a, _status(300, running=True)), (b, _status(185))])
    assert dict(round_.down) == {B: 185.0}


class _Kube:
    def __init__(self) -> None:
        self.patches: list[dict] = []
        self.events: list[tuple[str, bool]] = []

    def patch_pod_meta(self, pod: dict, annotations: dict) -> dict:
        self.patches.append(annotations)
        return pod

    def event(self, target: dict, reason: str, message: str, warning: bool = False) -> None:
        self.events.append((reason, warning))


def test_one_warning_per_stuck_start_and_one_note_when_postgres_is_back() -> None:
    pod = {"metadata": {"name": "p-1", "uid": "u-1", "annotations": {}}, "status": {}}
    kube = _Kube()
    ctx = SimpleNamespace(kube=kube, clock=lambda: NOW, effect=lambda name: None, stuck_marks={}, down_since={},
                          log=logging.getLogger("test"), config=SimpleNamespace(stuck_start_after_s=AFTER))
    stuck = Leadership(None, None, down={B: 185.0})
    back = Leadership(None, None, in_recovery=frozenset({B}))

    def view(round_: Leadership) -> SimpleNamespace:
        return SimpleNamespace(asked_pods=lambda: [(pod, B, "u-1", round_)], shard=None,
                               event_targets=lambda p: [p])

    assert publish_stuck_starts(ctx, view(stuck)) == 1  # type: ignore[arg-type]
    assert publish_stuck_starts(ctx, view(stuck)) == 0  # type: ignore[arg-type]  # the same, stale pod
    assert kube.patches == [{keys.ANN_POSTGRES_STUCK: "2026-11-27T09:56:55Z"}]
    assert publish_stuck_starts(ctx, view(back)) == 1  # type: ignore[arg-type]
    assert kube.patches[-1] == {keys.ANN_POSTGRES_STUCK: None}
    assert kube.events == [("PostgresStuck", True), ("PostgresRunning", False)]


def test_down_since_the_earlier_of_first_seen_and_the_reported_start() -> None:
    assert down_since(None, 30.0, NOW) == NOW - 30  # the manager says so
    assert down_since(NOW - 100, 2.0, NOW) == NOW - 100  # a manager retrying every few seconds starts anew
    assert down_since(NOW - 5, 60.0, NOW) == NOW - 60


def test_a_postgres_that_fails_every_start_is_marked_once_seen_down_long_enough() -> None:
    """A diverged old primary: not running, no action, no duration: the agent's own clock counts."""
    pod = {"metadata": {"name": "p-1", "uid": "u-1", "annotations": {}}, "status": {}}
    kube, clock = _Kube(), [NOW]
    ctx = SimpleNamespace(kube=kube, clock=lambda: clock[0], effect=lambda name: None, stuck_marks={}, down_since={},
                          log=logging.getLogger("test"), config=SimpleNamespace(stuck_start_after_s=AFTER))
    down = Leadership(None, None, down={B: 0.0})
    view = SimpleNamespace(asked_pods=lambda: [(pod, B, "u-1", down)], shard=None,
                           event_targets=lambda p: [p])
    assert publish_stuck_starts(ctx, view) == 0  # type: ignore[arg-type]  # first seen down now
    clock[0] = NOW + AFTER - 1
    assert publish_stuck_starts(ctx, view) == 0  # type: ignore[arg-type]
    clock[0] = NOW + AFTER
    assert publish_stuck_starts(ctx, view) == 1  # type: ignore[arg-type]
    assert kube.patches == [{keys.ANN_POSTGRES_STUCK: "2026-11-27T10:00:00Z"}]


@pytest.mark.parametrize("value", ["0", "-5", "inf"])
def test_the_threshold_must_be_a_positive_number_of_seconds(value: str, capsys) -> None:
    with pytest.raises(SystemExit):
        build(["--stuck-start-after", value])
    assert f"--stuck-start-after: {float(value)} is not a positive number of seconds" in capsys.readouterr().err


def test_what_the_agent_remembers_of_a_pod_goes_with_its_finalizer() -> None:
    ctx = Context(kube=SimpleNamespace(), dataplane=None)  # type: ignore[arg-type]
    ctx.stuck_marks["u-1"], ctx.down_since["u-1"], ctx.restores["u-1"] = "2026-11-27T09:56:55Z", NOW, {"state": "x"}
    ctx.down_since["u-2"] = NOW
    ctx.forget_pod({"metadata": {"name": "p-1", "uid": "u-1"}})
    assert (ctx.stuck_marks, ctx.restores, ctx.down_since) == ({}, {}, {"u-2": NOW})
    ctx.down_since["p-3"] = NOW  # a pod listed without a uid is remembered by name (asked_pods), and forgotten so
    ctx.forget_pod({"metadata": {"name": "p-3"}})
    assert ctx.down_since == {"u-2": NOW}
