"""The real ansible-runner and ansible-playbook against a test-double reconcile module."""

from pathlib import Path

import pytest
from multigres_pools.operator.outcome import Result, classify
from multigres_pools.operator.runner import PlaybookRunner

PLAYBOOK = Path(__file__).parent / "playbook" / "reconcile.yml"


@pytest.fixture
def runner(tmp_path: Path) -> PlaybookRunner:
    return PlaybookRunner(root=tmp_path / "runs", playbook=PLAYBOOK, keep_artifacts=2)


@pytest.mark.parametrize(("name", "result", "requeue"), [
    ("steady", Result.CONVERGED, None),
    ("waiting", Result.PROGRESSING, 1.0),
    ("invalid", Result.INVALID, None),
    ("unparsable", Result.INVALID, None),
    ("boom", Result.ERROR, None),
])
def test_run_and_classify(runner: PlaybookRunner, name: str, result: Result, requeue: float | None) -> None:
    report = runner.run("ns1", name)
    outcome = classify(report.status, report.module_result, report.failures)
    assert outcome.result is result, (report, outcome)
    assert outcome.requeue_after == requeue
    assert report.module_result is not None
    assert report.start_overhead is not None and 0 < report.start_overhead < report.duration
    if name == "invalid":
        assert outcome.status_written and "replicasPerCell" in outcome.message
    if name == "unparsable":
        assert not outcome.status_written and "spec.clusterName" in outcome.message
    if name == "boom":
        assert "500" in outcome.message


def test_artifacts_stay_bounded_and_only_interesting_events_hit_disk(runner: PlaybookRunner) -> None:
    idents = [runner.run("ns1", "steady").ident for _ in range(4)]
    runs = sorted(p.name for p in (runner.root / "ns1" / "steady" / "artifacts").iterdir())
    assert runs == idents[-2:]
    events = list((runner.root / "ns1" / "steady" / "artifacts" / idents[-1] / "job_events").iterdir())
    assert len(events) == 1  # the reconcile result only; the debug task and play events were dropped


def test_cancel_callback_stops_the_run(runner: PlaybookRunner) -> None:
    report = runner.run("ns1", "steady", cancel=lambda: True)
    assert classify(report.status, report.module_result, report.failures).result is Result.CANCELED
