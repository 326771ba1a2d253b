import pytest

from multigres_pools.operator.outcome import Result, classify


def test_success_without_requeue_is_converged() -> None:
    out = classify("successful", {"changed": False, "requeue_after": None, "failed": False})
    assert out.result is Result.CONVERGED and out.requeue_after is None


@pytest.mark.parametrize(("value", "expected"), [(2, 2.0), ("5", 5.0), (0.5, 0.5), (0, None), (None, None)])
def test_requeue_after_is_honoured(value: object, expected: float | None) -> None:
    out = classify("successful", {"changed": True, "requeue_after": value, "failed": False})
    assert out.requeue_after == expected
    assert out.result is (Result.PROGRESSING if expected else Result.CONVERGED)


def test_invalid_spec_from_status_condition() -> None:
    cond = {"type": "ConfigurationValid", "status": "False", "message": "spec.pools: required"}
    out = classify("failed", {"failed": True, "msg": "x", "status": {"conditions": [cond]}})
    assert out.result is Result.INVALID and out.status_written and out.message == "spec.pools: required"


def test_invalid_spec_from_validation_errors_without_status() -> None:
    errors = ["spec.clusterName: field required", "spec.pools: at least one pool"]  # as task_result.build makes them
    out = classify("failed", {"failed": True, "msg": "x", "errors": errors})
    assert out.result is Result.INVALID and not out.status_written
    assert out.message == "spec.clusterName: field required; spec.pools: at least one pool"


def test_a_valid_condition_does_not_make_a_failure_invalid() -> None:
    cond = {"type": "ConfigurationValid", "status": "True"}
    out = classify("failed", {"failed": True, "msg": "conflict", "status": {"conditions": [cond]}})
    assert out.result is Result.ERROR and out.message == "conflict"


def test_runner_failure_without_module_result_is_retryable() -> None:
    out = classify("failed", None, ["Gather: module not found"])
    assert out.result is Result.ERROR and "module not found" in out.message
    out = classify("timeout", None)
    assert out.result is Result.ERROR and "timeout" in out.message


def test_successful_runner_without_module_result_is_an_error() -> None:
    # e.g. the reconcile task was skipped by a condition: nothing reconciled, so not "converged"
    assert classify("successful", None).result is Result.ERROR


def test_canceled() -> None:
    assert classify("canceled", {"failed": False}).result is Result.CANCELED


def test_action_summary_counts_writes_by_verb_and_kind() -> None:
    from multigres_pools.operator.outcome import action_summary

    actions = [{"verb": "apply", "kind": "PersistentVolumeClaim", "name": f"d{i}", "reason": "r"} for i in range(3)]
    actions += [{"verb": "apply", "kind": "Pod", "name": f"p{i}", "reason": "r"} for i in range(3)]
    actions.append({"verb": "patch", "kind": "Pod", "name": "p0", "reason": "drain"})
    assert action_summary({"actions": actions}) == "apply PersistentVolumeClaim x3, apply Pod x3, patch Pod x1"
    assert action_summary({"actions": []}) == "none"
    assert action_summary(None) == "none"
