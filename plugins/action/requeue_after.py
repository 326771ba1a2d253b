"""Action plugin multigres.pools.requeue_after: returns its `period` for the operator-sdk Ansible
Operator, which reads it from the task's event (see the module documentation). Validated here:
the Ansible Operator fails the whole reconcile on a period Go cannot parse."""

from __future__ import annotations

import re
from typing import Any

from ansible.plugins.action import ActionBase

# Go's time.ParseDuration: one or more decimal numbers, each with a unit.
_PART = r"(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h)"
GO_DURATION = re.compile(f"(?:{_PART})+")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"period"})

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        period = str(self._task.args.get("period", "")).strip()
        if not GO_DURATION.fullmatch(period):
            return {**result, "failed": True,
                    "msg": f"requeue_after: period: {period!r} is not a Go duration (examples: 2s, 1.5s, 1m30s)"}
        return {**result, "changed": False, "period": period}
