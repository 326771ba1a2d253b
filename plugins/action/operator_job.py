"""Action plugin multigres.pools.operator_job: the first play of playbooks/operator_batch.yml blocks
here until the operator writes one batch (a JSON line `{"shards": [{host, namespace, name,
observed}]}`) into a FIFO, or until `idle_timeout` seconds pass, or the FIFO is removed (then the batch is empty).

The engine is imported when this class is loaded: the strategy loads it in the main
ansible-playbook process before the batch arrives, so the reconcile workers forked afterwards start
with everything imported (that is the point of a warm run).
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.multigres.pools.plugins.module_utils import deps

if deps.HAS_ENGINE:  # warm-up only: without the libraries, the reconcile task itself names them
    from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task as reconcile_task  # noqa: F401  # pylint: disable=unused-import


def read_job(fifo: str, idle_timeout: float) -> list[dict[str, str]]:
    # Read-write: opening never blocks, and the FIFO never reads as closed between writers.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        deadline = time.monotonic() + idle_timeout
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            # A restarted operator removes its predecessor's FIFOs: an orphaned run then ends at once.
            if left <= 0 or not os.path.exists(fifo):
                return []
            if not select.select([fd], [], [], min(left, 1.0))[0]:
                continue
            try:
                buf += os.read(fd, 65536)
            except BlockingIOError:
                continue
    finally:
        os.close(fd)
    return list(json.loads(buf.split(b"\n", 1)[0]).get("shards") or [])


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"fifo", "idle_timeout"})

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        fifo = self._task.args.get("fifo")
        if not fifo:
            raise AnsibleActionFail("operator_job: fifo is required")
        try:
            shards = read_job(str(fifo), float(self._task.args.get("idle_timeout", 300)))
        except (OSError, ValueError) as exc:
            raise AnsibleActionFail(f"operator_job: cannot read the batch from {fifo}: {exc}") from exc
        result.update(changed=False, shards=shards)
        return result
