"""No postgresPasswordSecretRef: the renderer declares the superuser password Secret the pods mount,
and the planner asks for it only while it is missing (it is never rotated behind the user's back)."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.multigres.pools.plugins.module_utils.core import naming
from ansible_collections.multigres.pools.plugins.module_utils.plan.actions import Verb
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from .plan_factories import NOW, desired, healthy, observed, plan

SPEC = {"clusterName": "demo", "globalTopoServer": {"address": "topo:2379", "rootPath": "/multigres/global"},
        "pools": {"main": {"cells": ["z1"], "replicasPerCell": 3}}}


def _render(spec: dict) -> render.Desired:
    return render.desired_state(model.load_spec(spec, root="spec"), "db")


def test_declared_only_when_the_spec_names_no_secret():
    gen = _render(SPEC).generated_password
    sid = naming.ShardId("demo", "postgres", "default", "0-inf")
    assert gen is not None and (gen.secret, gen.key) == (naming.password_secret_name(sid), "password")
    mine = {**SPEC, "postgresPasswordSecretRef": {"name": "mine", "key": "pw"}}
    assert _render(mine).generated_password is None


def _planned(secrets: list[dict]) -> list:  # type: ignore[type-arg]
    gen = _render(SPEC).generated_password
    want = replace(desired(), generated_password=gen)
    pods, pvcs = healthy(want.pools[0])
    obs = observed(pods, pvcs, others={"Secret": tuple(secrets)})
    return [a for a in plan(want, obs, NOW).actions if a.verb is Verb.GENERATE_PASSWORD]


def test_planned_while_missing_and_never_again():
    gen = _render(SPEC).generated_password
    assert gen is not None
    (action,) = _planned([])
    assert action.name == gen.secret and "postgresPasswordSecretRef" in action.reason
    assert _planned([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": gen.secret}}]) == []
