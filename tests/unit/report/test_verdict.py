"""The judgement: the worst state wins, and each state says what it rests on."""

from __future__ import annotations

from multigres_pools.report import verdict

from . import fixtures as f
from .fixtures import name


def test_each_fixture_has_its_state() -> None:
    assert verdict.judge(f.healthy()).state == verdict.HEALTHY
    assert verdict.judge(f.draining()).state == verdict.RECONCILING
    assert verdict.judge(f.no_primary()).state == verdict.DEGRADED
    assert verdict.judge(f.unreachable()).state == verdict.UNKNOWN


def test_the_engine_s_degraded_phase_and_stuck_conditions_come_first_without_repeats() -> None:
    message = "spec.pools.default.storage.size: below the grown PVC (20Gi)"
    stuck = f"{name(1)}: init container postgres waiting: ErrImagePull"
    cr = f.shard("Degraded", message, Stalled=("True", "Refused", message),
                 ConfigurationValid=("False", "Refused", message), PodsStuck=("True", "ErrImagePull", stuck))
    found = f.answers(2, 0, {}, standbys=(1,), connected=(1,))
    judged = verdict.judge(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found))
    assert judged == verdict.Verdict(verdict.DEGRADED, [message, f"PodsStuck: {stuck}"])


def test_a_cohort_below_its_durability_policy_is_degraded() -> None:
    report = f.build(f.shard(), [f.pod(0, "PRIMARY"), f.pod(1), f.pod(2)],
                     f.answers(3, 0, {}, standbys=(1, 2), connected=()))  # listed, but nobody streams
    assert report.replication.durable is False
    assert verdict.judge(report).reasons == [verdict.BELOW_POLICY]
    assert verdict.attention(report)[-1] == (f"{verdict.BELOW_POLICY}: it needs at least 2 poolers, the primary "
                                             "included, counting the primary and the cohort members streaming now")


def test_work_in_progress_is_reconciling_and_says_which() -> None:
    cr = f.shard("Progressing", "", generation=7, observed=6,
                 RollingUpdate=("True", "PodsDrifted", "1/3 pods updated"),
                 WaitingForMaintenanceWindow=("True", "OutsideMaintenanceWindow", "rolling update until Sun 02:00"))
    pods = [f.pod(0, "PRIMARY"), f.pod(1, ready=False), f.pod(2, terminating=True)]
    judged = verdict.judge(f.build(cr, pods, f.answers(3, 0, {}, standbys=(1,), connected=(1,))))
    assert judged.state == verdict.RECONCILING
    assert judged.reasons == ["generation 7 not yet acted on (the status is of 6)", f"{name(1)} not ready (Running)",
                              f"{name(2)} terminating", "rolling update: 1/3 pods updated",
                              "waiting for a maintenance window: rolling update until Sun 02:00"]
    assert judged.headline(f.healthy()).endswith("; 2 more below")


def test_serving_with_something_to_look_at_is_a_warning() -> None:
    cr = f.shard(BackupHealthy=("False", "Stale", "the newest complete backup is 30h old (threshold 25h)"))
    report = f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], f.answers(2, 0, {}, standbys=(1,), connected=(1,)))
    assert verdict.judge(report) == verdict.Verdict(verdict.WARNING, [
        "BackupHealthy: the newest complete backup is 30h old (threshold 25h)"])


def test_a_pooler_that_does_not_answer_while_others_do_is_named_without_the_network_hint() -> None:
    found = f.answers(3, 0, {}, standbys=(1,), connected=(1,), failed={2: "UNAVAILABLE: connection refused"})
    report = f.build(f.shard(), [f.pod(0, "PRIMARY"), f.pod(1), f.pod(2)], found)
    assert verdict.attention(report) == [
        f"pooler {name(2)} at {f.address(2)} did not answer: UNAVAILABLE: connection refused"]
    assert report.data_plane.reached and report.data_plane.hint == ""
