"""The controller's scheduling with the real ansible-runner and the test-double reconcile playbook:
requeue_after is honoured, failures back off, an invalid spec waits for a spec change; the same
whether each shard runs alone or in a batch with others."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.operator.backoff import Backoff
from multigres_pools.operator.controller import Controller, Settings, split_concurrency
from multigres_pools.operator.outcome import Result
from multigres_pools.operator.runner import PlaybookRunner

PLAYBOOK = Path(__file__).parent / "playbook" / "reconcile.yml"


def cr(name: str, generation: int = 1) -> dict:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": "ns", "generation": generation},
            "spec": {"clusterName": name}}


@pytest.mark.parametrize("batch_size", [1, 3])
def test_scheduling_by_outcome(tmp_path: Path, batch_size: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="multigres_pools.operator.controller")
    batches: list[list[str]] = []
    reported: list[tuple[str, str, str]] = []
    runs: list[tuple[str, Result]] = []

    async def scenario() -> Controller:
        ctl = Controller(PlaybookRunner(root=tmp_path, playbook=PLAYBOOK),
                         Settings(concurrency=2, coalesce=0.01, resync_period=3600, batch_size=batch_size),
                         # A retry far beyond the scenario (which takes minutes on a loaded machine): one failure only.
                         backoff=Backoff(base=3600, cap=7200, rand=lambda: 0.0),
                         report_invalid=lambda ns, name, msg: reported.append((ns, name, msg)))
        original = ctl.reconcile_batch

        async def recording(keys, forks=None, warm=None):  # type: ignore[no-untyped-def]
            batches.append([k[1] for k in keys])
            outcomes = await original(keys, forks, warm)
            runs.extend((key[1], outcome.result) for key, outcome in outcomes.items())
            return outcomes

        ctl.reconcile_batch = recording  # type: ignore[method-assign]
        for name in ("waiting", "boom", "unparsable"):
            ctl.shard_event(None, cr(name))
        await asyncio.sleep(0.05)  # all three are due before the workers start
        stop = asyncio.Event()
        loop = asyncio.create_task(ctl.run(stop))

        async def until(check) -> None:  # type: ignore[no-untyped-def]
            # A generous deadline: each pass is a real ansible-playbook run, seconds each on a loaded machine.
            for _ in range(3600):
                if check():
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"timed out; runs so far: {runs}")

        # requeue_after=1 brings "waiting" back without any event.
        await until(lambda: [n for n, _ in runs].count("waiting") >= 2)
        # A deleted shard is forgotten (deleted now, so that its requeues cost no more passes).
        ctl.shard_event("DELETED", cr("waiting"))
        await until(lambda: ("ns", "waiting") not in ctl.queue.queue)
        # Events on a failing or invalid shard do not cause runs (backoff / gate) ...
        ctl.shard_event("MODIFIED", {**cr("boom"), "metadata": {**cr("boom")["metadata"],
                                                                 "annotations": {"x": "1"}}})
        ctl.shard_event("MODIFIED", {**cr("unparsable"), "metadata": {**cr("unparsable")["metadata"],
                                                                       "annotations": {"x": "1"}}})
        await asyncio.sleep(1.5)  # longer than the deleted shard's requeue_after: it must not come back
        assert ("ns", "waiting") not in ctl.queue.queue
        assert [n for n, _ in runs].count("boom") == 1
        assert [n for n, _ in runs].count("unparsable") == 1
        # ... but a spec change does.
        ctl.shard_event("MODIFIED", cr("unparsable", generation=2))
        await until(lambda: [n for n, _ in runs].count("unparsable") == 2)
        stop.set()
        await loop
        return ctl

    ctl = asyncio.run(scenario())
    results = dict(runs)
    assert results["waiting"] is Result.PROGRESSING
    assert results["boom"] is Result.ERROR and ctl.backoff.failures(("ns", "boom")) == 1
    assert results["unparsable"] is Result.INVALID
    # The module could not write status for the unparsable spec, so the operator reported it, once per run.
    assert [r[:2] for r in reported] == [("ns", "unparsable")] * 2 and "spec.clusterName" in reported[0][2]
    samples = {s.name: s.value for m in ctl.metrics.registry.collect() for s in m.samples}
    counts = {s.labels["result"]: s.value for m in ctl.metrics.registry.collect() for s in m.samples
              if s.name == "multigres_pools_operator_reconciles_total"}
    assert counts["error"] == 1 and counts["invalid"] == 2 and counts["progressing"] >= 2
    assert samples["multigres_pools_operator_runner_start_overhead_seconds_count"] == len(runs)
    # At DEBUG, each pass says where its time went: when its task started, within the pass.
    starts = [m for r in caplog.records
              if (m := re.search(r"the pass's task started ([0-9.]+)s into its ([0-9.]+)s", r.getMessage()))]
    assert len(starts) == len(runs) and all(float(m[1]) <= float(m[2]) for m in starts), starts
    assert max(len(b) for b in batches) <= batch_size
    if batch_size > 1:  # the three shards were due together: the first run took them all
        assert sorted(batches[0]) == ["boom", "unparsable", "waiting"], batches


@pytest.mark.parametrize("concurrency", [1, 2, 3, 4, 7, 16])
@pytest.mark.parametrize("batch_size", [1, 2, 10, 50])
def test_batches_never_run_more_passes_at_once_than_the_concurrency(concurrency: int, batch_size: int) -> None:
    workers, forks = split_concurrency(concurrency, batch_size)
    assert 1 <= workers * forks <= concurrency
    assert forks <= batch_size
    if batch_size == 1:
        assert (workers, forks) == (concurrency, 1)  # as before batching
    if concurrency >= 2:
        assert workers >= 2  # one slow batch never holds up every other shard
