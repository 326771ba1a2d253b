"""Typed status: every status the engine writes is described by the one model (MultigresShardStatus,
which the CRD's status schema is generated from), and every condition type is a keys.ShardCondition."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import MultigresShardStatus
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, observed, plan, shard_cr

STAMP = "2026-05-01T12:00:00Z"


def _statuses() -> list[dict]:
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    converged = observed(pods, pvcs, cr=shard_cr())
    empty = observed(cr=shard_cr())
    out = [status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP) for obs in (converged, empty)]
    out.append(status.refused(out[0], ["spec.pools.main: refused"], 4, STAMP))
    return out


def _declared() -> set[str]:
    return {field.alias or name for name, field in MultigresShardStatus.model_fields.items()}


def test_every_status_field_the_engine_writes_is_declared_in_the_model():
    for written in _statuses():
        assert set(written) <= _declared(), set(written) - _declared()
        MultigresShardStatus.model_validate(written)  # and with the declared types


def test_every_condition_the_engine_writes_is_named_in_keys():
    for written in _statuses():
        assert {c["type"] for c in written["conditions"]} <= set(keys.ShardCondition)
