"""The operator's core: a per-shard work queue drained by N workers, each running the reconcile
playbook for a batch of ready shards at a time. Kopf handlers only feed it (see `handlers`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from . import artifacts
from .backoff import Backoff
from .metrics import Metrics
from .outcome import Outcome, Result, action_summary, classify
from .relevance import Router, ShardKey
from .runner import RunReport
from .workqueue import AsyncWorkQueue

log = logging.getLogger(__name__)


class Runner(Protocol):
    root: Path

    def run_batch(self, keys: Sequence[ShardKey], cancel: Callable[[], bool] = ...,
                  forks: int | None = ...) -> dict[ShardKey, RunReport]: ...


class InvalidSpecReporter(Protocol):
    def __call__(self, namespace: str, name: str, message: str) -> None: ...


@dataclass
class Settings:
    concurrency: int
    coalesce: float = 0.1
    resync_period: float = 600.0
    # How long running reconciles may finish at shutdown before they are cancelled.
    shutdown_grace: float = 20.0
    # Shards per ansible-playbook run; 1 runs each shard alone.
    batch_size: int = 1


def split_concurrency(concurrency: int, batch_size: int) -> tuple[int, int]:
    """(workers, forks per worker) for `concurrency` passes at once in batches of `batch_size`.

    `concurrency` (from the cgroup limits, see `cpu`) bounds the passes running at once, each an
    ansible worker process plus its module process, so workers x forks never exceeds it. A batch
    amortises one ansible-playbook start-up over its shards whatever its forks, so fewer, wider
    workers would save the most CPU; but a batch ends with its slowest shard (e.g. a deletion waiting
    for the agent's topology cleanup), so at least two workers keep one slow batch from stalling
    every other shard. Batch size 1 gives one single-fork worker per pass, as before batching.
    """
    concurrency, batch_size = max(1, concurrency), max(1, batch_size)
    workers = max(min(2, concurrency), -(-concurrency // batch_size))
    return workers, max(1, min(batch_size, concurrency // workers))


class Controller:
    def __init__(self, runner: Runner, settings: Settings, metrics: Metrics | None = None,
                 backoff: Backoff | None = None, report_invalid: InvalidSpecReporter | None = None) -> None:
        self.runner = runner
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.backoff = backoff or Backoff()
        self.report_invalid = report_invalid
        self.queue = AsyncWorkQueue(settings.coalesce)
        self.router = Router()
        self._cancel = threading.Event()
        self.outcomes: dict[ShardKey, Outcome] = {}
        self.metrics.concurrency.set(settings.concurrency)
        self.metrics.queue_depth.set_function(lambda: self.queue.queue.depth())

    # --- fed by the kopf handlers -----------------------------------------------------------------
    def shard_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        routed = self.router.shard_event(event_type, body)
        if routed is None:
            return
        key, spec_changed, gone = routed
        if gone:
            self.queue.forget(key)
            self.backoff.success(key)
            self.outcomes.pop(key, None)
            return
        # A spec change lifts the gate of an invalid spec or a backoff: the user fixed something.
        self.queue.add(key, force=spec_changed)

    def child_event(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        key = self.router.child_event(kind, event_type, body)
        if key is not None and self.router.knows(key):
            self.queue.add(key)

    # --- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        count, forks = split_concurrency(self.settings.concurrency, self.settings.batch_size)
        workers = [asyncio.create_task(self._worker(forks), name=f"reconcile-worker-{i}") for i in range(count)]
        resync = asyncio.create_task(self._resync_loop(), name="resync")
        await stop.wait()
        log.info("stopping: %d reconcile(s) running", len(self.queue.queue.processing()))
        resync.cancel()
        self.queue.close()
        _done, pending = await asyncio.wait(workers, timeout=self.settings.shutdown_grace)
        if pending:
            log.warning("cancelling %d reconcile(s) still running after %.0fs", len(pending),
                        self.settings.shutdown_grace)
            self._cancel.set()
            await asyncio.wait(pending)

    async def _worker(self, forks: int) -> None:
        # The first ready key plus the keys already due: a batch never waits to fill up.
        while batch := await self.queue.get_batch(self.settings.batch_size):
            try:
                await self.reconcile_batch(batch, forks)
            finally:
                for key in batch:
                    self.queue.done(key)

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.resync_period)
            live = self.router.shards()
            # Spread the resync over a tenth of the period so it never arrives as one burst.
            for key in live:
                self.queue.add(key, delay=random.uniform(0, self.settings.resync_period / 10))
            await asyncio.to_thread(artifacts.prune_shards, self.runner.root, live)

    async def reconcile(self, key: ShardKey) -> Outcome:
        return (await self.reconcile_batch([key]))[key]

    async def reconcile_batch(self, keys: Sequence[ShardKey], forks: int | None = None) -> dict[ShardKey, Outcome]:
        """One playbook run over `keys`, then each shard's outcome handled on its own."""
        self.metrics.running.inc(len(keys))
        try:
            reports: Mapping[ShardKey, RunReport | None] = await asyncio.to_thread(
                self.runner.run_batch, keys, self._cancel.is_set, forks)
            error = None
        except Exception as exc:  # the runner itself broke (disk full, bad config): retry later
            log.exception("runner failed for %s", ", ".join(f"{ns}/{name}" for ns, name in keys))
            reports, error = {}, Outcome(Result.ERROR, f"runner error: {exc}")
        finally:
            self.metrics.running.dec(len(keys))
        return {key: await self._finish(key, reports.get(key), error) for key in keys}

    async def _finish(self, key: ShardKey, report: RunReport | None, error: Outcome | None) -> Outcome:
        namespace, name = key
        if report is None:
            outcome = error or Outcome(Result.ERROR, "runner error: no report for this shard")
        else:
            outcome = classify(report.status, report.module_result, report.failures)
            self.metrics.duration.observe(report.duration)
            if report.start_overhead is not None:
                self.metrics.runner_overhead.observe(report.start_overhead)
        self.metrics.reconciles.labels(outcome.result.value).inc()
        if report is not None:
            # One line per pass; the end-to-end test reads these to prove what one pass did.
            log.info("reconciled %s/%s: %s in %.2fs; actions: %s", namespace, name, outcome.result.value,
                     report.duration, action_summary(report.module_result))
        if self.router.knows(key):  # a shard deleted while its pass ran is not scheduled again
            self.outcomes[key] = outcome
            await self._schedule_next(key, outcome)
        return outcome

    async def _schedule_next(self, key: ShardKey, outcome: Outcome) -> None:
        namespace, name = key
        match outcome.result:
            case Result.CONVERGED:
                self.backoff.success(key)
            case Result.PROGRESSING:
                self.backoff.success(key)
                self.queue.add(key, delay=outcome.requeue_after)
            case Result.INVALID:
                # No retry until the spec changes (a forced add lifts this gate).
                self.backoff.success(key)
                self.queue.queue.gate(key, float("inf"))
                log.warning("%s/%s: invalid spec: %s", namespace, name, outcome.message)
                if not outcome.status_written and self.report_invalid is not None:
                    await asyncio.to_thread(self.report_invalid, namespace, name, outcome.message)
            case Result.ERROR:
                delay = self.backoff.failure(key)
                log.warning("%s/%s: reconcile failed (attempt %d, retry in %.1fs): %s", namespace, name,
                            self.backoff.failures(key), delay, outcome.message)
                self.queue.gate(key, delay)
                self.queue.add(key, delay=delay)
            case Result.CANCELED:
                pass
