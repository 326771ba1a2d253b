"""Runs of playbooks/reconcile.yml through ansible-runner's Python API, several shards per run.

Each shard is one inventory host (`<namespace>.<name>`, with `shard_name`/`shard_namespace` as host
vars), so one ansible-playbook start-up (~half the CPU of a pass) serves a whole batch; the play's
`hosts:` comes from the `reconcile_hosts` extra var and stays `localhost` for people running the
playbook by hand. The module reads the MultigresShard itself, so the host vars only name it; the
operator adds `shard_observed`, a snapshot of the shard's objects from its caches, which the module
replays instead of listing them again.

A warm run (`WarmRun`) is the same run started ahead of time: playbooks/operator_batch.yml waits in
its first play, ansible-playbook and the engine already imported, until the operator hands it a
batch through a FIFO; its second play is the reconcile playbook itself. It cuts the start-up out of
the time between a decision and the first write.

Events are read in memory as they stream and sorted by host; only failures and the reconcile
task's own result are written to disk (one file per event otherwise; ansible-runner#724), then
moved into each shard's own run directory, so `<root>/<ns>/<name>/artifacts/<run>/` stays per shard.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from ..paths import collection_root, playbook
from . import artifacts, proctree
from .relevance import ShardKey

REPO_ROOT = collection_root()
DEFAULT_PLAYBOOK = playbook("reconcile.yml")
BATCH_PLAYBOOK = playbook("operator_batch.yml")
RECONCILE_ACTIONS = frozenset({"multigres.pools.shard_reconcile", "shard_reconcile"})
_RESULT_EVENTS = {"runner_on_ok", "runner_on_failed", "runner_on_unreachable"}
# The inventory group of a batch; playbooks/reconcile.yml targets it through this extra var.
BATCH_GROUP = "multigres_shards"
HOSTS_EXTRAVAR = "reconcile_hosts"
# The FIFO a warm run's first play reads its batch from (playbooks/operator_batch.yml).
JOB_FIFO_EXTRAVAR = "operator_job_fifo"
# Scratch private data dirs of running batches, under the artifacts root; the leading dot keeps
# them out of artifacts.prune_shards, which only looks at namespace directories.
BATCHES_DIR = ".batches"


def host_name(key: ShardKey) -> str:
    """The inventory host of a shard; namespaces contain no dots, so it is unique."""
    namespace, name = key
    return f"{namespace}.{name}"


def host_vars(key: ShardKey, observed: Path | None = None) -> dict[str, Any]:
    """Role `shard` reads shard_name/shard_namespace, and shard_observed when the operator has a snapshot."""
    namespace, name = key
    out: dict[str, Any] = {"shard_name": name, "shard_namespace": namespace, "ansible_connection": "local"}
    if observed is not None:
        out["shard_observed"] = str(observed)
    return out


def batch_inventory(keys: Sequence[ShardKey], observed: Mapping[ShardKey, Path] | None = None) -> dict[str, Any]:
    """One local host per shard, named by its host vars."""
    hosts = {host_name(k): host_vars(k, (observed or {}).get(k)) for k in keys}
    return {"all": {"children": {BATCH_GROUP: {"hosts": hosts}}}}


@dataclass
class RunReport:
    status: str
    rc: int | None
    module_result: dict[str, Any] | None
    failures: list[str]
    duration: float
    # Seconds from the call to the moment the reconcile task started: the runner's start cost.
    start_overhead: float | None
    ident: str
    # The end of ansible-playbook's output when the run did not succeed: why a run that never reached
    # the reconcile task failed (an error at start-up has no host event).
    detail: str = ""


@dataclass
class _HostEvents:
    """The events of one host (one shard) of a batch."""

    module_result: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)
    task_started: float | None = None
    finished: float | None = None

    def result(self, kind: str, data: Mapping[str, Any], ours: bool) -> bool:
        """Record a result event; True if it is worth keeping on disk."""
        res = data.get("res") or {}
        if ours:
            # The callback leaves `failed` out of `res`; the event kind says it.
            self.module_result = {**res, "failed": kind != "runner_on_ok"}
            self.finished = time.monotonic()
            return True
        if kind != "runner_on_ok" and not data.get("ignore_errors"):
            self.failures.append(f"{data.get('task', '?')}: {res.get('msg', kind)}")
            self.finished = time.monotonic()
            return True
        return False

    def status(self, batch_status: str) -> str:
        """This host's verdict: another host failing fails the batch, not this shard's pass."""
        if batch_status == "canceled" or (self.module_result is None and not self.failures):
            return batch_status
        failed = bool(self.failures) or bool(self.module_result and self.module_result["failed"])
        return "failed" if failed else "successful"


@dataclass
class _EventCollector:
    """ansible-runner's event handler for a batch: sorts events by host (event_data["host"])."""

    hosts: dict[str, _HostEvents]

    def __call__(self, event: Mapping[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        ours = data.get("task_action") in RECONCILE_ACTIONS
        host = self.hosts.get(data.get("host", ""))
        if ours and kind in ("playbook_on_task_start", "runner_on_start"):
            # The task start has no host: it starts the task for every host of the batch.
            for h in self.hosts.values() if host is None else (host,):
                if h.task_started is None:
                    h.task_started = time.monotonic()
        if kind not in _RESULT_EVENTS or host is None:
            return False
        return host.result(kind, data, ours)


@dataclass
class PlaybookRunner:
    root: Path
    playbook: Path = DEFAULT_PLAYBOOK
    keep_artifacts: int = 3
    timeout: int = 600
    verbosity: int = 0
    envvars: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Scratch dirs left by batches of a killed predecessor: nothing runs yet, so all are stale.
        shutil.rmtree(self.root / BATCHES_DIR, ignore_errors=True)

    def _env(self) -> dict[str, str]:
        # ansible-playbook and the module's interpreter come from this Python's environment.
        bindir = str(Path(sys.executable).parent)
        # Ansible's own scratch space goes under the artifacts root: in the container only that
        # emptyDir is writable (readOnlyRootFilesystem).
        scratch = self.root / ".ansible"
        env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
               "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_HOME": str(scratch),
               "ANSIBLE_LOCAL_TEMP": str(scratch / "tmp"), "ANSIBLE_REMOTE_TEMP": str(scratch / "tmp")}
        cfg = REPO_ROOT / "ansible.cfg"
        if "ANSIBLE_CONFIG" not in os.environ and cfg.is_file():
            env["ANSIBLE_CONFIG"] = str(cfg)
        env.update(self.envvars)
        return env

    def run(self, namespace: str, name: str, cancel: Callable[[], bool] = lambda: False) -> RunReport:
        key = (namespace, name)
        return self.run_batch([key], cancel)[key]

    def run_batch(self, keys: Sequence[ShardKey], cancel: Callable[[], bool] = lambda: False,
                  forks: int | None = None, observed: Mapping[ShardKey, Path] | None = None,
                  ) -> dict[ShardKey, RunReport]:
        """One ansible-playbook run over `keys` (distinct shards); a report per shard.

        `forks` (default: one per shard) bounds the passes running at once inside the batch;
        `observed` gives shards a snapshot to replay instead of listing.
        """
        keys = list(dict.fromkeys(keys))
        ident = artifacts.new_ident()
        # A fresh private data dir per batch: ansible-runner writes the inventory and extra vars
        # there, and two batches run at once.
        pdd = self.root / BATCHES_DIR / ident
        pdd.mkdir(parents=True)
        started = time.monotonic()
        collector = _EventCollector({host_name(k): _HostEvents() for k in keys})
        try:
            result = ansible_runner.run(
                private_data_dir=str(pdd), playbook=str(self.playbook), ident=ident,
                inventory=batch_inventory(keys, observed), extravars={HOSTS_EXTRAVAR: BATCH_GROUP},
                forks=max(1, min(forks or len(keys), len(keys))),
                envvars=self._env(), quiet=True, verbosity=self.verbosity or None, timeout=self.timeout,
                event_handler=collector, cancel_callback=cancel, rotate_artifacts=0,
                settings={"pexpect_timeout": 1},  # the cancel callback is polled this often
            )
            status, rc = result.status, result.rc
            detail = "" if status == "successful" else _output_tail(pdd, ident)
        finally:
            self._file_events(pdd, ident, keys)
        return _reports(keys, collector, status, rc, started, ident, detail)

    def kill_runs(self) -> int:
        """SIGKILL every run of this runner with every process it started; returns how many died.

        ansible-runner's cancel kills the run's process group only, and ansible-playbook puts each
        worker in a session of its own, so the workers, with the module each runs, would outlive it
        and go on writing. The runs are our children whose command line names our batches dir."""
        marker = str(self.root / BATCHES_DIR)
        links = proctree.children()
        runs = [pid for pid in links.get(os.getpid(), []) if marker in proctree.cmdline(pid)]
        doomed = proctree.tree(runs, links)
        proctree.kill(doomed)
        return len(doomed)

    def warm(self, forks: int, cancel: Callable[[], bool] = lambda: False, idle_timeout: float = 300.0) -> WarmRun:
        """Start a run that waits for its batch (see `WarmRun`)."""
        return WarmRun(self, forks, cancel, idle_timeout)

    def _file_events(self, pdd: Path, ident: str, keys: Sequence[ShardKey]) -> None:
        """Move each kept event into its shard's run dir, prune old runs, drop the batch's scratch dir."""
        by_host = {host_name(k): artifacts.shard_dir(self.root, *k) for k in keys}
        for shard in by_host.values():
            (shard / "artifacts" / ident / "job_events").mkdir(parents=True, exist_ok=True)
        events_dir = pdd / "artifacts" / ident / "job_events"
        for path in events_dir.glob("*.json") if events_dir.is_dir() else ():
            dest = by_host.get(_event_host(path))
            if dest is not None:
                path.replace(dest / "artifacts" / ident / "job_events" / path.name)
        shutil.rmtree(pdd, ignore_errors=True)
        for shard in by_host.values():
            artifacts.prune_runs(shard, self.keep_artifacts)


def _output_tail(pdd: Path, ident: str, limit: int = 2000) -> str:
    out = pdd / "artifacts" / ident / "stdout"
    return out.read_text(errors="replace")[-limit:].strip() if out.is_file() else ""


def _reports(keys: Sequence[ShardKey], collector: _EventCollector, status: str, rc: int | None,
             started: float, ident: str, detail: str = "") -> dict[ShardKey, RunReport]:
    ended = time.monotonic()
    reports: dict[ShardKey, RunReport] = {}
    for key in keys:
        host = collector.hosts[host_name(key)]
        host_status = host.status(status)
        reports[key] = RunReport(
            status=host_status, rc=0 if host_status == "successful" else rc,
            module_result=host.module_result, failures=host.failures,
            duration=(host.finished or ended) - started,
            start_overhead=None if host.task_started is None else host.task_started - started, ident=ident,
            detail=detail)
    return reports


class WarmRun:
    """An ansible-runner run of playbooks/operator_batch.yml, started before there is work: its
    first play waits on a FIFO for one batch (`hand`), adds one host per shard, and the reconcile
    playbook runs on them. Idle for `idle_timeout` seconds, it ends without reconciling anything.
    Each run takes one batch; the caller starts the next one when this one is done."""

    def __init__(self, runner: PlaybookRunner, forks: int, cancel: Callable[[], bool], idle_timeout: float) -> None:
        self.runner = runner
        self.ident = artifacts.new_ident()
        self.pdd = runner.root / BATCHES_DIR / self.ident
        self.pdd.mkdir(parents=True)
        self.fifo = self.pdd / "job"
        os.mkfifo(self.fifo, 0o600)
        self.collector = _EventCollector({})
        self.handed = False
        self._abandon = False
        self.expires = time.monotonic() + idle_timeout - min(30.0, idle_timeout / 4)
        extravars = {HOSTS_EXTRAVAR: BATCH_GROUP, JOB_FIFO_EXTRAVAR: str(self.fifo),
                     "operator_job_idle_timeout": idle_timeout, "reconcile_playbook": str(runner.playbook)}
        self.thread, self.result = ansible_runner.run_async(
            private_data_dir=str(self.pdd), playbook=str(BATCH_PLAYBOOK), ident=self.ident, extravars=extravars,
            forks=max(1, forks), envvars=runner._env(), quiet=True, verbosity=runner.verbosity or None,
            timeout=int(idle_timeout + runner.timeout), event_handler=self.collector,
            cancel_callback=lambda: self._abandon or cancel(), rotate_artifacts=0,
            settings={"pexpect_timeout": 1})

    def waiting(self) -> bool:
        """Alive, not yet given a batch and not about to give up waiting: `hand` starts at once."""
        return not self.handed and self.thread.is_alive() and time.monotonic() < self.expires

    def _send(self, shards: list[dict[str, str]]) -> bool:
        return send_line(self.fifo, (json.dumps({"shards": shards}) + "\n").encode())

    def hand(self, keys: Sequence[ShardKey], observed: Mapping[ShardKey, Path] | None = None,
             wait_reader: float = 30.0) -> dict[ShardKey, RunReport] | None:
        """Give this run its batch and wait for it to finish; None if the run is not waiting (it
        expired or failed to start): the caller then runs the batch another way."""
        keys = list(dict.fromkeys(keys))
        self.collector.hosts = {host_name(k): _HostEvents() for k in keys}
        shards = [{"host": host_name(k), "namespace": k[0], "name": k[1],
                   "observed": str((observed or {}).get(k) or "")} for k in keys]
        started = time.monotonic()
        # The run may still be starting: its job task opens the FIFO once it runs.
        deadline = started + wait_reader
        while not self._send(shards):
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.close()
                return None
            time.sleep(0.005)
        self.handed = True
        try:
            self.thread.join()
            status, rc = self.result.status, self.result.rc
        finally:
            self.runner._file_events(self.pdd, self.ident, keys)
        return _reports(keys, self.collector, status, rc, started, self.ident)

    def close(self) -> None:
        """Give up a run that was never handed a batch: it is told there is no work (or, if it
        does not read, cancelled) and its scratch directory goes."""
        if not self.handed:
            self.handed = True
            if not self._send([]):
                self._abandon = True
            self.thread.join(timeout=30)
            if self.thread.is_alive():
                self._abandon = True
                self.thread.join()
        shutil.rmtree(self.pdd, ignore_errors=True)


def send_line(fifo: Path, line: bytes) -> bool:
    """Write `line` to the FIFO's reader; False if there is none: none yet (ENXIO), or the reader
    went away while we wrote (EPIPE: its run was killed, say, by an abort)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        view = memoryview(line)
        while view:
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                time.sleep(0.001)
    except BrokenPipeError:
        return False
    finally:
        os.close(fd)
    return True


def _event_host(path: Path) -> str:
    try:
        return str((json.loads(path.read_text()).get("event_data") or {}).get("host", ""))
    except (OSError, ValueError):
        return ""
