"""The shard_reconcile result, defined once (reconcile/task_result.py): the engine builds it, the operator reads
it back, and nothing reads a key nothing builds."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.reconcile import shard as reconcile
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task as reconcile_task
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task_result
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.task_result import TaskResult

from multigres_pools.operator import outcome
from multigres_pools.operator.outcome import Result, classify

DECLARED = TaskResult.__required_keys__


def test_the_engine_result_has_exactly_the_declared_keys() -> None:
    assert {f.name for f in dataclasses.fields(reconcile.Result)} == DECLARED
    assert set(reconcile.Result().as_dict()) == DECLARED - {"diff"}  # diff only when there is one


def test_a_result_survives_the_trip_through_json() -> None:
    built = reconcile.Result(changed=True, msg="m", actions=[{"verb": "apply", "kind": "Pod", "name": "p"}],
                             plan=["apply Pod/p"], waiting=["w"], requeue_after=2.5, status={"conditions": []},
                             requests={"list": 3}, writes=1, seconds=0.25, replayed=4,
                             diff=[{"prepared": "x\n"}]).as_dict()
    assert task_result.read(json.loads(json.dumps(built))) == built
    quiet = reconcile.Result().as_dict()
    assert task_result.read(json.loads(json.dumps(quiet))) == {**quiet, "diff": []}


def test_a_partial_or_malformed_result_reads_as_empty_values() -> None:
    read = task_result.read({"changed": 1, "requeue_after": "5", "errors": ("a",), "actions": ["junk", {"v": 1}],
                             "requests": "junk", "status": "junk"})
    assert read["changed"] is True and read["requeue_after"] == 5.0 and read["errors"] == ["a"]
    assert read["actions"] == [{"v": 1}] and read["requests"] == {} and read["status"] is None
    assert task_result.read({"requeue_after": "soon"})["requeue_after"] == 0.0


def test_a_failed_task_is_built_by_the_same_builder_and_classified_from_it() -> None:
    params = {k: v.get("default") for k, v in reconcile_task.ARGUMENT_SPEC.items()}
    params.update(namespace="Not A Label", name="demo")
    out, _ = reconcile_task.run(params, check_mode=False, diff=False)
    assert set(out) == DECLARED - {"diff"} and out["failed"] and out["errors"]
    verdict = classify("failed", json.loads(json.dumps(out)))
    assert verdict.result is Result.INVALID and verdict.message == "; ".join(out["errors"])


def test_the_operator_reads_only_declared_keys() -> None:
    """Every string key outcome.py looks up on a task result (res[...], .get(...)) is declared."""
    tree = ast.parse(Path(outcome.__file__).read_text())
    looked_up = {node.slice.value for node in ast.walk(tree)
                 if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "res"
                 and isinstance(node.slice, ast.Constant)}
    gets = {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "res"
            and node.args and isinstance(node.args[0], ast.Constant)}
    assert looked_up and looked_up | gets <= DECLARED
    assert "validation_errors" not in Path(outcome.__file__).read_text()
