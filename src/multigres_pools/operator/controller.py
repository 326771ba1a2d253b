"""The operator's core: a per-shard work queue drained by N workers. For each shard a worker first
decides in process, from the watch caches, whether a pass has anything to write (`decide`); only
shards that do are handed, in a batch, to an ansible-runner run of the reconcile playbook (a warm
one when possible, see runner.WarmRun). The informers feed the caches and the queue (see
`__main__`); tests feed them through `shard_event`/`child_event`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Decision, Request, execute
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..watch import Kind
from . import artifacts
from .backoff import Backoff
from .cache import NODE, SHARD, Cache, CacheView
from .decide import Verdict, decide_shard
from .metrics import Metrics
from .outcome import Outcome, Result, action_summary, classify
from .relevance import Router, ShardKey
from .runner import RunReport, WarmRun
from .workqueue import AsyncWorkQueue

log = logging.getLogger(__name__)
SNAPSHOTS_DIR = ".snapshots"


class Runner(Protocol):
    root: Path

    def run_batch(self, keys: Sequence[ShardKey], cancel: Callable[[], bool] = ...,
                  forks: int | None = ..., observed: Mapping[ShardKey, Path] | None = ...,
                  ) -> dict[ShardKey, RunReport]: ...

    def warm(self, forks: int, cancel: Callable[[], bool] = ..., idle_timeout: float = ...) -> WarmRun: ...

    def kill_runs(self) -> int: ...


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
    # Seconds between full checks of a shard: a playbook run that lists live, whatever the caches
    # say (0: never). The first one of each shard falls at a random point of the first period.
    full_check_period: float = 0.0
    # Keep one ansible-runner run per worker started and waiting for its batch.
    warm_runners: bool = True
    # A warm run that got no batch for this long ends and is replaced.
    warm_idle_timeout: float = 300.0
    # The allow-lists for images, ServiceAccounts and Secrets (spec/policy.py); the playbook runs get
    # the same through the environment, so the in-process decision and the run agree.
    policy: SpecPolicy = field(default_factory=SpecPolicy)
    # Where other shards' claims are looked for (state/claims.py): the watched namespaces, ("*",) for all;
    # the playbook runs get the same through the environment.
    claim_namespaces: tuple[str, ...] = ()


def split_concurrency(concurrency: int, batch_size: int) -> tuple[int, int]:
    """(workers, forks per worker) for `concurrency` passes at once in batches of `batch_size`.

    `concurrency` (from the cgroup limits, see `cpu`) bounds the passes running at once, each an
    ansible worker process, so workers x forks never exceeds it. A batch amortises one
    ansible-playbook start-up over its shards whatever its forks, so fewer, wider workers would
    save the most CPU; but a batch ends with its slowest shard (e.g. a deletion waiting for the
    agent's topology cleanup), so at least two workers keep one slow batch from stalling every
    other shard. Batch size 1 gives one single-fork worker per pass.
    """
    concurrency, batch_size = max(1, concurrency), max(1, batch_size)
    workers = max(min(2, concurrency), -(-concurrency // batch_size))
    return workers, max(1, min(batch_size, concurrency // workers))


def _no_live_client() -> KubeClient:
    raise RuntimeError("the operator has no API client for reads its caches cannot answer")


class Controller:
    def __init__(self, runner: Runner, settings: Settings, metrics: Metrics | None = None,
                 backoff: Backoff | None = None, report_invalid: InvalidSpecReporter | None = None,
                 cache: Cache | None = None, live: Callable[[], KubeClient] = _no_live_client,
                 may_write: Callable[[], bool] = lambda: True) -> None:
        self.runner = runner
        # False once this instance's leadership is in doubt: no run starts, running ones are killed.
        self.may_write = may_write
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.backoff = backoff or Backoff()
        self.report_invalid = report_invalid
        self.cache = cache or Cache()
        self.view = CacheView(self.cache, live)
        self.queue = AsyncWorkQueue(settings.coalesce)
        self.router = Router()
        self._cancel = threading.Event()
        self._full_due: dict[ShardKey, float] = {}
        self.outcomes: dict[ShardKey, Outcome] = {}
        self.verdicts: dict[ShardKey, Verdict] = {}  # the last in-process decision of each shard
        self.reports: dict[ShardKey, RunReport] = {}  # the last playbook pass of each shard
        self.handed: dict[ShardKey, Verdict] = {}  # the decision that caused it
        self.playbook_passes: Counter[ShardKey] = Counter()
        self.snapshots = runner.root / SNAPSHOTS_DIR
        shutil.rmtree(self.snapshots, ignore_errors=True)  # left by a killed predecessor
        self.snapshots.mkdir(parents=True, exist_ok=True)
        self.metrics.concurrency.set(settings.concurrency)
        self.metrics.queue_depth.set_function(lambda: self.queue.queue.depth())
        self.metrics.cache_objects.set_function(self.cache.size)

    # --- fed by the informers (or by tests) -------------------------------------------------------
    def on_event(self, kind: Kind, event_type: str, obj: Manifest, old: Manifest | None) -> None:
        self.cache.apply(kind, event_type, obj, old)
        # Events of the initial lists are the start-up pass over every shard: background work.
        background = not self.cache.synced()
        if kind == SHARD:
            self.shard_event(event_type, obj, background=background)
        elif kind == NODE:
            self.node_event(obj, old, background=background)
        else:
            self.child_event(kind.kind, event_type, obj, background=background)

    def node_event(self, obj: Manifest, old: Manifest | None, *, background: bool = False) -> None:
        """A node cordoned or uncordoned: every shard with a pod on it has work (plan/maintenance.py)."""
        cordoned = bool((obj.get("spec") or {}).get("unschedulable"))
        if cordoned == bool(((old or {}).get("spec") or {}).get("unschedulable")):
            return
        node = (obj.get("metadata") or {}).get("name", "")
        for key in {self.router.shard_of(pod) for pod in self.cache.pods_on(node)}:
            if key is not None and self.router.knows(key):
                log.info("node %s %s: reconciling %s/%s", node, "cordoned" if cordoned else "uncordoned", *key)
                self.queue.add(key, background=background)

    def shard_event(self, event_type: str | None, body: Manifest, *, background: bool = False) -> None:
        if body.get("metadata") is None:
            return
        if self.cache.shard(_key(body)) is None and event_type != "DELETED":
            self.cache.apply(SHARD, "ADDED", dict(body), None)  # fed directly (tests)
        routed = self.router.shard_event(event_type, body)
        if routed is None:
            return
        key, spec_changed, gone = routed
        if gone:
            self.cache.apply(SHARD, "DELETED", dict(body), None)
            self.queue.forget(key)
            self.backoff.success(key)
            for seen in (self.outcomes, self.verdicts, self.reports, self.handed, self._full_due):
                seen.pop(key, None)
            return
        if key not in self._full_due and self.settings.full_check_period > 0:
            self._full_due[key] = self.queue.now() + random.uniform(0, self.settings.full_check_period)
        # A spec change lifts the gate of an invalid spec or a backoff: the user fixed something.
        self.queue.add(key, force=spec_changed and not background, background=background)

    def child_event(self, kind: str, event_type: str | None, body: Manifest, *,
                    background: bool = False) -> None:
        key = self.router.child_event(kind, event_type, body)
        if key is not None and self.router.knows(key):
            log.debug("%s %s %s: reconciling %s/%s", kind, event_type, (body.get("metadata") or {}).get("name"), *key)
            self.queue.add(key, background=background)

    def abort(self) -> None:
        """Leadership is in doubt: start nothing more and kill the running playbooks now (their
        ansible-runner cancel kills each run's process group), without the shutdown grace."""
        log.warning("aborting: %d reconcile(s) running are killed", len(self.queue.queue.processing()))
        self._cancel.set()
        self.queue.close()
        self.runner.kill_runs()

    def _cancelled(self) -> bool:
        """ansible-runner's cancel callback, polled every second by each run: when True, every run
        is killed with all its processes first (ansible-runner's own kill misses the workers)."""
        if self._cancel.is_set() or not self.may_write():
            self.runner.kill_runs()
            return True
        return False

    # --- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event, synced: asyncio.Event | None = None) -> None:
        """Drain the queue until `stop`; workers start once `synced` is set (the caches hold full
        lists: deciding on a partial cache would plan to create what exists)."""
        if synced is not None:
            waiting = asyncio.create_task(synced.wait())
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([waiting, stopping], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            stopping.cancel()
            if stop.is_set():
                return
        count, forks = split_concurrency(self.settings.concurrency, self.settings.batch_size)
        # Worker 0 never takes resync-only work: a real change always finds a worker soon.
        workers = [asyncio.create_task(self._worker(forks, background=count == 1 or i > 0),
                                       name=f"reconcile-worker-{i}") for i in range(count)]
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

    async def _worker(self, forks: int, *, background: bool) -> None:
        warm: WarmRun | None = None
        try:
            while True:
                if warm is None and self.settings.warm_runners:
                    warm = await asyncio.to_thread(self.runner.warm, forks, self._cancelled,
                                                   self.settings.warm_idle_timeout)
                # The first ready key plus the keys already due: a batch never waits to fill up.
                batch = await self.queue.get_batch(self.settings.batch_size, background=background)
                if not batch:
                    break
                try:
                    if warm is not None and not warm.waiting():
                        await asyncio.to_thread(warm.close)
                        warm = None
                    # The queue holds only the (namespace, name) keys this controller adds.
                    await self.reconcile_batch(cast(list[tuple[str, str]], batch), forks, warm)
                    if warm is not None and warm.handed:  # each warm run takes one batch
                        warm = None
                finally:
                    for key in batch:
                        self.queue.done(key)
        finally:
            if warm is not None:
                await asyncio.to_thread(warm.close)

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.resync_period)
            live = self.router.shards()
            # Spread over a tenth of the period; queued as background, behind every real event.
            for key in live:
                self.queue.add(key, delay=random.uniform(0, self.settings.resync_period / 10), background=True)
            await asyncio.to_thread(artifacts.prune_shards, self.runner.root, live)

    async def reconcile(self, key: ShardKey) -> Outcome:
        return (await self.reconcile_batch([key]))[key]

    def _decide(self, keys: Sequence[ShardKey], now: float) -> dict[ShardKey, Verdict | None]:
        out: dict[ShardKey, Verdict | None] = {}
        for key in keys:
            full = self.settings.full_check_period > 0 and self._full_due.get(key, float("inf")) <= now
            out[key] = decide_shard(self.view, key, self.snapshots, full_check=full, policy=self.settings.policy,
                                    claim_namespaces=self.settings.claim_namespaces)
        return out

    async def reconcile_batch(self, keys: Sequence[ShardKey], forks: int | None = None,
                              warm: WarmRun | None = None) -> dict[ShardKey, Outcome]:
        """Decide every shard in process; hand those with work to one playbook run. Returns each
        shard's outcome; `warm` is used if given (the caller must then replace it)."""
        log.debug("deciding %s", ", ".join(f"{ns}/{name}" for ns, name in keys))
        verdicts = await asyncio.to_thread(self._decide, keys, self.queue.now())
        outcomes: dict[ShardKey, Outcome] = {}
        to_run: list[ShardKey] = []
        for key, verdict in verdicts.items():
            if verdict is None:  # gone from the cache: deleted meanwhile
                continue
            self.verdicts[key] = verdict
            self.metrics.decisions.labels(verdict.reason).inc()
            self.metrics.decision_duration.observe(verdict.seconds)
            if verdict.run:
                to_run.append(key)
            else:
                assert verdict.outcome is not None
                log.debug("decided %s/%s in process: %s", *key, verdict.outcome.result.value)
                outcome = verdict.outcome
                if verdict.status is not None:
                    outcome = await self._write_status(key, verdict.status, outcome)
                    verdict.status = None  # the decision holds rendered objects: not kept per shard
                outcomes[key] = await self._settle(key, outcome)
        if to_run:
            outcomes.update(await self._run(to_run, verdicts, forks, warm))
        return outcomes

    async def _write_status(self, key: ShardKey, decision: Decision, outcome: Outcome) -> Outcome:
        """Carry out a status-only decision here, as the module would have (decide.py); the write is
        made only while this instance is the leader, as a run would be started only then."""
        if self._cancel.is_set() or not self.may_write():
            return Outcome(Result.CANCELED, "status not written: this instance's leadership is in doubt")
        namespace, name = key
        request = Request(namespace=namespace, name=name, policy=self.settings.policy,
                          claim_namespaces=self.settings.claim_namespaces)
        stamp = facts.format_time(decision.now or dt.datetime.now(dt.UTC))
        try:
            # live() inside the thread: each thread has its own client (CacheView).
            await asyncio.to_thread(lambda: execute(self.view.live(), request, decision, stamp))
        except Exception as exc:  # the API server refused or is unreachable: retried with backoff
            return Outcome(Result.ERROR, f"status write failed: {exc}")
        self.metrics.status_writes.inc()
        log.info("wrote the status of %s/%s in process: %s", namespace, name, _status_summary(decision))
        return outcome

    async def _run(self, keys: list[ShardKey], verdicts: Mapping[ShardKey, Verdict | None], forks: int | None,
                   warm: WarmRun | None) -> dict[ShardKey, Outcome]:
        if self._cancelled():
            canceled = Outcome(Result.CANCELED, "not run: this instance's leadership is in doubt")
            return {key: await self._settle(key, canceled) for key in keys}
        observed = {k: v.snapshot for k in keys if (v := verdicts.get(k)) is not None and v.snapshot is not None}
        self.handed.update({k: v for k in keys if (v := verdicts.get(k)) is not None})
        self.metrics.running.inc(len(keys))
        self.metrics.runner_runs.inc()
        try:
            reports: Mapping[ShardKey, RunReport | None] | None = None
            if warm is not None:
                reports = await asyncio.to_thread(warm.hand, keys, observed)
            if reports is None:
                reports = await asyncio.to_thread(self.runner.run_batch, keys, self._cancelled, forks, observed)
            error = None
        except Exception as exc:  # the runner itself broke (disk full, bad config): retry later
            log.exception("runner failed for %s", ", ".join(f"{ns}/{name}" for ns, name in keys))
            reports, error = {}, Outcome(Result.ERROR, f"runner error: {exc}")
        finally:
            self.metrics.running.dec(len(keys))
            for path in observed.values():
                with contextlib.suppress(OSError):
                    path.unlink()
        now = self.queue.now()
        for key in keys:
            if self.settings.full_check_period > 0 and key in self._full_due:
                self._full_due[key] = now + self.settings.full_check_period
        return {key: await self._finish(key, reports.get(key), error) for key in keys}

    async def _finish(self, key: ShardKey, report: RunReport | None, error: Outcome | None) -> Outcome:
        namespace, name = key
        if report is None:
            outcome = error or Outcome(Result.ERROR, "runner error: no report for this shard")
        else:
            # A run that failed before any task has no host event: its output says why.
            failures = report.failures or ([report.detail] if report.detail and report.module_result is None else [])
            outcome = classify(report.status, report.module_result, failures)
            self.reports[key] = report
            self.playbook_passes[key] += 1
            self.metrics.duration.observe(report.duration)
            if report.start_overhead is not None:
                self.metrics.runner_overhead.observe(report.start_overhead)
            # One line per playbook pass; the end-to-end test reads these to prove what one pass did.
            log.info("reconciled %s/%s: %s in %.2fs; actions: %s", namespace, name, outcome.result.value,
                     report.duration, action_summary(report.module_result))
            if report.start_overhead is not None:
                log.debug("%s/%s: the pass's task started %.2fs into its %.2fs", namespace, name,
                          report.start_overhead, report.duration)
        return await self._settle(key, outcome)

    async def _settle(self, key: ShardKey, outcome: Outcome) -> Outcome:
        self.metrics.reconciles.labels(outcome.result.value).inc()
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
                if not outcome.status_written and self.report_invalid is not None and self.may_write():
                    await asyncio.to_thread(self.report_invalid, namespace, name, outcome.message)
            case Result.ERROR:
                delay = self.backoff.failure(key)
                log.warning("%s/%s: reconcile failed (attempt %d, retry in %.1fs): %s", namespace, name,
                            self.backoff.failures(key), delay, outcome.message)
                self.queue.gate(key, delay)
                self.queue.add(key, delay=delay)
            case Result.CANCELED:
                pass


def _status_summary(decision: Decision) -> str:
    """The phase and the conditions that are not True, as the status now says."""
    status = decision.status or {}
    waiting = [c.get("type", "?") for c in status.get("conditions") or [] if c.get("status") != "True"]
    return f"phase {status.get('phase', '?')}" + (f"; not true: {', '.join(waiting)}" if waiting else "")


def _key(body: Mapping[str, Any]) -> ShardKey:
    meta = body.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")
