"""Action plugin for multigres.pools.shard_reconcile: with a local connection and the controller's
own Python (what playbooks/reconcile.yml sets), the pass runs inside ansible-playbook's worker
instead of a fresh module process. Same code, same arguments, same result; it only skips the
module's process start, its payload unzip and its imports (about 1 s of CPU per pass, see
docs/performance.md). Anything else (another connection or interpreter) runs the module as usual.
"""

from __future__ import annotations

import os
import sys
from typing import Any, cast

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible_collections.multigres.pools.plugins.module_utils import deps
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import arguments as reconcile_args

# Imported at load time on purpose: the strategy loads this class in the main ansible-playbook
# process, so every worker it forks starts with the engine already imported. A controller without
# the engine's libraries runs the module instead, which names the missing one.
if deps.HAS_ENGINE:
    from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task as reconcile_task

LOCAL_CONNECTIONS = frozenset({"local", "ansible.builtin.local"})
# Set to 0 to always run the module in its own process (to compare, or to debug the module path).
IN_PROCESS_ENV = "MULTIGRES_POOLS_IN_PROCESS"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _in_process(self, task_vars: dict[str, Any]) -> bool:
        if os.environ.get(IN_PROCESS_ENV, "1") == "0" or not deps.HAS_ENGINE:
            return False
        if self._play_context.connection not in LOCAL_CONNECTIONS:
            return False
        interpreter = task_vars.get("ansible_python_interpreter")
        if interpreter is None:
            return False
        return str(self._templar.template(interpreter)) == sys.executable

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        if not self._in_process(task_vars):
            # cast: the module's result, a dict (ansible-core is untyped).
            return cast(dict[str, Any], self._execute_module(module_name="multigres.pools.shard_reconcile",
                                                             module_args=self._task.args, task_vars=task_vars))
        result: dict[str, Any] = super().run(tmp, task_vars)
        validator = ArgumentSpecValidator(reconcile_args.ARGUMENT_SPEC,
                                          mutually_exclusive=reconcile_args.MUTUALLY_EXCLUSIVE,
                                          required_one_of=reconcile_args.REQUIRED_ONE_OF,
                                          required_by=reconcile_args.REQUIRED_BY)
        validated = validator.validate(self._task.args)
        if validated.error_messages:
            return {**result, "failed": True, "msg": "; ".join(validated.error_messages)}
        out, warnings = reconcile_task.run(validated.validated_parameters,
                                           check_mode=bool(self._task.check_mode), diff=bool(self._task.diff))
        result.update(out)
        if warnings:
            result["warnings"] = warnings
        if not out.get("failed"):
            result["failed"] = False
        return result
