"""One run of playbooks/reconcile.yml for one shard, through ansible-runner's Python API.

The module reads the MultigresShard itself, so the extravars only name it. Events are read in
memory as they stream; only failures and the reconcile task's own result are written to disk,
which keeps the artifact directory small (one file per event otherwise; ansible-runner#724).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from . import artifacts

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PLAYBOOK = REPO_ROOT / "playbooks" / "reconcile.yml"
RECONCILE_ACTIONS = frozenset({"multigres.pools.shard_reconcile", "shard_reconcile"})
_RESULT_EVENTS = {"runner_on_ok", "runner_on_failed", "runner_on_unreachable"}


def reconcile_extravars(namespace: str, name: str) -> dict[str, str]:
    """Names the MultigresShard for playbooks/reconcile.yml (role `shard`), which reads it itself."""
    return {"shard_name": name, "shard_namespace": namespace}


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


@dataclass
class _EventCollector:
    started: float
    module_result: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)
    task_started: float | None = None

    def __call__(self, event: Mapping[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        ours = data.get("task_action") in RECONCILE_ACTIONS
        if ours and self.task_started is None and kind in ("playbook_on_task_start", "runner_on_start"):
            self.task_started = time.monotonic()
        if kind not in _RESULT_EVENTS:
            return False
        res = data.get("res") or {}
        if ours:
            # The callback leaves `failed` out of `res`; the event kind says it.
            self.module_result = {**res, "failed": kind != "runner_on_ok"}
            return True
        if kind != "runner_on_ok" and not data.get("ignore_errors"):
            self.failures.append(f"{data.get('task', '?')}: {res.get('msg', kind)}")
            return True
        return False


@dataclass
class PlaybookRunner:
    root: Path
    playbook: Path = DEFAULT_PLAYBOOK
    keep_artifacts: int = 3
    timeout: int = 600
    verbosity: int = 0
    envvars: Mapping[str, str] = field(default_factory=dict)

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
        pdd = artifacts.shard_dir(self.root, namespace, name)
        pdd.mkdir(parents=True, exist_ok=True)
        ident = artifacts.new_ident()
        started = time.monotonic()
        collector = _EventCollector(started)
        try:
            result = ansible_runner.run(
                private_data_dir=str(pdd), playbook=str(self.playbook), ident=ident,
                inventory="localhost ansible_connection=local",
                extravars=reconcile_extravars(namespace, name),
                envvars=self._env(), quiet=True, verbosity=self.verbosity or None, timeout=self.timeout,
                event_handler=collector, cancel_callback=cancel, rotate_artifacts=0,
            )
            status, rc = result.status, result.rc
        finally:
            artifacts.prune_runs(pdd, self.keep_artifacts)
        overhead = None if collector.task_started is None else collector.task_started - started
        return RunReport(status=status, rc=rc, module_result=collector.module_result,
                         failures=collector.failures, duration=time.monotonic() - started,
                         start_overhead=overhead, ident=ident)
