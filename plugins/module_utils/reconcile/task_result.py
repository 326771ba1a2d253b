"""The `shard_reconcile` task's result, defined once: `build` makes it (the module and its action
plugin return it), `read` takes it back from an ansible-runner event (the operator classifies it).

Every key is declared in `TaskResult`; a reader typed against it cannot ask for a key nothing
produces (mypy), and tests/unit/operator/test_task_result.py checks that the operator reads only
declared keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict


class TaskResult(TypedDict):
    """The task result as Ansible and ansible-runner carry it (JSON)."""

    changed: bool
    failed: bool
    msg: str
    errors: list[str]  # each starts with the field path (invalid spec or arguments)
    actions: list[dict[str, Any]]  # apply.Outcome.as_dict: verb, kind, name, reason, result, ...
    plan: list[str]
    waiting: list[str]
    requeue_after: float  # 0: converged
    status: dict[str, Any] | None  # the MultigresShard status this pass wrote (a CR drives it)
    finished: bool
    requests: dict[str, int]
    writes: int
    seconds: float
    replayed: int
    diff: list[dict[str, str]]  # only with --diff; left out when empty


def build(
    *,
    changed: bool = False,
    failed: bool = False,
    msg: str = "",
    errors: Iterable[str] = (),
    actions: Iterable[dict[str, Any]] = (),
    plan: Iterable[str] = (),
    waiting: Iterable[str] = (),
    requeue_after: float = 0.0,
    status: dict[str, Any] | None = None,
    finished: bool = False,
    requests: Mapping[str, int] | None = None,
    writes: int = 0,
    seconds: float = 0.0,
    replayed: int = 0,
    diff: Iterable[dict[str, str]] = (),
) -> dict[str, Any]:
    """The one place a task result is made. Returned as a plain dict (what AnsibleModule.exit_json
    takes), shaped as `TaskResult`; `diff` is left out when empty, as Ansible expects."""
    out: TaskResult = {
        "changed": changed, "failed": failed, "msg": msg, "errors": list(errors), "actions": list(actions),
        "plan": list(plan), "waiting": list(waiting), "requeue_after": requeue_after, "status": status,
        "finished": finished, "requests": dict(requests or {}), "writes": writes, "seconds": seconds,
        "replayed": replayed, "diff": list(diff),
    }
    wire: dict[str, Any] = dict(out)
    if not out["diff"]:
        del wire["diff"]
    return wire


def _float(value: object) -> float:
    try:
        return float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else 0.0
    except ValueError:
        return 0.0


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def read(raw: Mapping[str, Any]) -> TaskResult:
    """A task result as received (ansible-runner's event `res`, `failed` added from the event kind),
    typed: a missing or malformed key reads as its empty value, never as an error."""
    status, requests = raw.get("status"), raw.get("requests")
    return {
        "changed": bool(raw.get("changed")),
        "failed": bool(raw.get("failed")),
        "msg": str(raw.get("msg") or ""),
        "errors": _strings(raw.get("errors")),
        "actions": [dict(a) for a in raw.get("actions") or [] if isinstance(a, Mapping)],
        "plan": _strings(raw.get("plan")),
        "waiting": _strings(raw.get("waiting")),
        "requeue_after": _float(raw.get("requeue_after")),
        "status": dict(status) if isinstance(status, Mapping) else None,
        "finished": bool(raw.get("finished")),
        "requests": {str(k): v for k, v in requests.items() if isinstance(v, int)} if isinstance(requests, Mapping)
        else {},
        "writes": int(_float(raw.get("writes"))),
        "seconds": _float(raw.get("seconds")),
        "replayed": int(_float(raw.get("replayed"))),
        "diff": [dict(d) for d in raw.get("diff") or [] if isinstance(d, Mapping)],
    }
