"""The real ansible-runner and ansible-playbook against a test-double reconcile module."""

import os
import threading
import time
from pathlib import Path

import pytest

from multigres_pools.operator.outcome import Result, classify
from multigres_pools.operator.runner import PlaybookRunner, send_line

PLAYBOOK = Path(__file__).parent / "playbook" / "reconcile.yml"


@pytest.fixture
def runner(tmp_path: Path) -> PlaybookRunner:
    return PlaybookRunner(root=tmp_path / "runs", playbook=PLAYBOOK, keep_artifacts=2)


def test_a_run_of_one_shard_is_classified_by_its_pass(runner: PlaybookRunner) -> None:
    # The failing pass: the whole ansible-playbook run fails with it (a batch's other outcomes below).
    report = runner.run("ns1", "boom")
    outcome = classify(report.status, report.module_result, report.failures)
    assert outcome.result is Result.ERROR and "500" in outcome.message, (report, outcome)
    assert report.rc not in (0, None) and outcome.requeue_after is None
    assert report.start_overhead is not None and 0 < report.start_overhead < report.duration


def test_artifacts_stay_bounded_and_only_interesting_events_hit_disk(runner: PlaybookRunner) -> None:
    idents = [runner.run("ns1", "steady").ident for _ in range(3)]
    runs = sorted(p.name for p in (runner.root / "ns1" / "steady" / "artifacts").iterdir())
    assert runs == idents[-2:]
    events = list((runner.root / "ns1" / "steady" / "artifacts" / idents[-1] / "job_events").iterdir())
    assert len(events) == 1  # the reconcile result only; the debug task and play events were dropped


def test_cancel_callback_stops_the_run(runner: PlaybookRunner) -> None:
    report = runner.run("ns1", "steady", cancel=lambda: True)
    assert classify(report.status, report.module_result, report.failures).result is Result.CANCELED


def test_batch_reports_each_shard_on_its_own(runner: PlaybookRunner) -> None:
    keys = [("ns1", "steady"), ("ns2", "steady"), ("ns1", "boom"), ("ns1", "waiting"), ("ns1", "invalid"),
            ("ns1", "unparsable")]
    reports = runner.run_batch(keys, forks=2)
    assert set(reports) == set(keys)
    results = {k: classify(r.status, r.module_result, r.failures) for k, r in reports.items()}
    assert all(r.module_result is not None for r in reports.values())
    assert all(r.start_overhead is not None and 0 < r.start_overhead < r.duration for r in reports.values())
    # One shard failing fails the playbook, not the other shards' passes.
    assert results[("ns1", "boom")].result is Result.ERROR and "500" in results[("ns1", "boom")].message
    assert reports[("ns1", "boom")].rc not in (0, None)
    assert results[("ns1", "steady")].result is Result.CONVERGED and reports[("ns1", "steady")].rc == 0
    assert results[("ns2", "steady")].result is Result.CONVERGED
    assert results[("ns1", "waiting")].result is Result.PROGRESSING
    assert results[("ns1", "waiting")].requeue_after == 1.0
    assert results[("ns1", "invalid")].result is Result.INVALID and results[("ns1", "invalid")].status_written
    assert "replicasPerCell" in results[("ns1", "invalid")].message
    # A spec the module cannot parse: it wrote no status, so the operator reports it.
    unparsable = results[("ns1", "unparsable")]
    assert unparsable.result is Result.INVALID and not unparsable.status_written
    assert "spec.clusterName" in unparsable.message
    assert all(results[k].requeue_after is None for k in keys if k[1] != "waiting")
    # Each host's events are its own: the module saw that shard's name and namespace, and only
    # the failing shard carries the failure.
    assert reports[("ns1", "boom")].module_result["msg"] == "apiserver said 500"  # type: ignore[index]
    assert reports[("ns1", "waiting")].module_result["changed"] is True  # type: ignore[index]
    assert reports[("ns1", "steady")].module_result["changed"] is False  # type: ignore[index]
    assert all(not r.failures for r in reports.values())
    assert len({r.ident for r in reports.values()}) == 1  # one ansible-runner call
    # Kept events land in each shard's own run directory; the batch's scratch dir is gone.
    for ns, name in keys:
        run_dir = runner.root / ns / name / "artifacts" / reports[(ns, name)].ident / "job_events"
        assert len(list(run_dir.iterdir())) == 1, (ns, name)
    assert not any((runner.root / ".batches").iterdir())


def test_a_task_failing_on_one_host_is_reported_for_that_host_only(tmp_path: Path) -> None:
    # A playbook whose first task fails for one shard: that shard never reaches the reconcile task.
    playbook = tmp_path / "reconcile.yml"
    playbook.write_text(PLAYBOOK.read_text().replace(
        "ansible.builtin.debug:", "ansible.builtin.fail:\n      when: shard_name == 'early'\n      args:"))
    (tmp_path / "library").symlink_to(PLAYBOOK.parent / "library")
    runner = PlaybookRunner(root=tmp_path / "runs", playbook=playbook)
    reports = runner.run_batch([("ns1", "early"), ("ns1", "steady")])
    early = classify(reports[("ns1", "early")].status, reports[("ns1", "early")].module_result,
                     reports[("ns1", "early")].failures)
    assert early.result is Result.ERROR and reports[("ns1", "early")].module_result is None
    assert reports[("ns1", "early")].failures and "reconciling ns1/early" in early.message
    steady = reports[("ns1", "steady")]
    assert not steady.failures
    assert classify(steady.status, steady.module_result, steady.failures).result is Result.CONVERGED


def test_send_line_reports_a_reader_that_is_missing_or_goes_away_mid_write(tmp_path: Path) -> None:
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    assert send_line(fifo, b"{}\n") is False  # nobody reads yet

    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    threading.Timer(0.2, os.close, (reader,)).start()  # the run dies while the write still blocks
    assert send_line(fifo, b"x" * (4 << 20)) is False  # larger than any pipe buffer: EPIPE, not an error

    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = bytearray()

    def drain() -> None:
        while len(got) < 1 << 20:
            try:
                got.extend(os.read(reader, 1 << 16))
            except BlockingIOError:
                time.sleep(0.001)

    thread = threading.Thread(target=drain)
    thread.start()
    try:
        assert send_line(fifo, b"y" * (1 << 20)) is True
    finally:
        thread.join(10)
        os.close(reader)
    assert bytes(got) == b"y" * (1 << 20)
