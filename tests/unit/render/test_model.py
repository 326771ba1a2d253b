"""The MultigresShard model: defaults, the bad-spec corpus, transition rules, and properties."""

from __future__ import annotations

from decimal import Decimal

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import naming
from ansible_collections.multigres.pools.plugins.module_utils.spec import model, quantity
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import render_corpus as corpus


def _errors(spec_dict):
    with pytest.raises(model.SpecError) as info:
        model.load_spec(spec_dict)
    return info.value.errors


def test_minimal_spec_gets_the_documented_defaults():
    spec = model.load_spec(corpus.spec())
    assert (spec.database_name, spec.table_group_name, spec.shard_name) == ("postgres", "default", "0-inf")
    pool = spec.pools["default"]
    assert pool.replicas_per_cell == 3
    assert (pool.storage.size, pool.storage.access_modes) == ("1Gi", ["ReadWriteOnce"])
    assert spec.pvc_policy("default") == model.PVCDeletionPolicy(when_deleted="Retain", when_scaled="Delete")
    assert spec.backup.type == "filesystem" and spec.backup.filesystem.storage.size == "10Gi"
    assert spec.backup.pgbackrest_tls.mode == "auto"
    assert spec.global_topo_server.root_path == "/multigres/global"
    assert spec.password_secret() == model.SecretKeyRef(name=naming.password_secret_name(spec.shard_id), key="password")
    assert spec.multiorch_cells() == ["zone1"]
    assert spec.multigres.version == "v0.1.0" and spec.container_images().postgres == "ghcr.io/multigres/pgctld:v0.1.0"
    assert spec.monitoring.postgres_exporter.enabled and not spec.multigateway.enabled
    assert spec.multigateway_cells() == []
    assert (spec.multiorch.pooler_health_check_interval, spec.multiorch.recovery_cycle_interval) == (None, None)


def test_pool_policy_overrides_the_shard_field_by_field():
    spec = model.load_spec(corpus.spec({
        "pvcDeletionPolicy": {"whenDeleted": "Delete"},
        "pools": {"default": {"pvcDeletionPolicy": {"whenScaled": "Retain"}}},
    }))
    assert spec.pvc_policy("default") == model.PVCDeletionPolicy(when_deleted="Delete", when_scaled="Retain")


def test_wire_form_round_trips_and_keeps_camel_case():
    spec = model.load_spec(corpus.spec({"backup": {"pgbackrestTLS": {"mode": "secret", "secretName": "tls"}},
                                        "pools": {"default": {"storage": {"class": "fast"}}}}))
    wire = model.spec_to_dict(spec)
    assert wire["backup"]["pgbackrestTLS"]["secretName"] == "tls"
    assert wire["pools"]["default"]["storage"]["class"] == "fast"
    assert model.load_spec(wire) == spec


@pytest.mark.parametrize("case", corpus.cases("invalid"))
def test_every_bad_spec_is_rejected_with_its_field_path_and_rule(case):
    errors = _errors(corpus.spec(case["patch"]))
    matching = [e for e in errors if e.startswith(case["path"])]
    assert matching, f"no error names {case['path']}: {errors}"
    if case.get("rule") and case["rule"] != "map-key-format":
        assert any(f"(rule: {case['rule']})" in e for e in matching), errors


def test_load_shard_rejects_wrong_kind_and_reports_paths_from_the_document_root():
    doc = corpus.document("demo", "db", corpus.spec({"pools": {"default": {"replicasPerCell": 0}}}))
    doc["kind"] = "Shard"
    with pytest.raises(model.SpecError) as info:
        model.load_shard(doc)
    assert any(e.startswith("kind:") for e in info.value.errors)
    assert any(e.startswith("spec.pools.default.replicasPerCell:") for e in info.value.errors)
    with pytest.raises(model.SpecError, match="expected a mapping"):
        model.load_shard(["not", "a", "mapping"])  # type: ignore[arg-type]


@pytest.mark.parametrize("case", corpus.cases("forbidden_updates"))
def test_forbidden_updates_name_the_field_and_rule(case):
    old = model.load_spec(corpus.spec(case["old"]))
    new = model.load_spec(corpus.spec(case["new"]))
    errors = model.check_transition(old, new)
    assert any(e.startswith(f"{case['path']}:") and f"(rule: {case['rule']})" in e for e in errors), errors


@pytest.mark.parametrize("case", corpus.cases("allowed_updates"))
def test_allowed_updates_pass(case):
    old = model.load_spec(corpus.spec(case["old"]))
    new = model.load_spec(corpus.spec(case["new"]))
    assert model.check_transition(old, new) == []


def test_no_change_is_always_allowed():
    spec = model.load_spec(corpus.spec())
    assert model.check_transition(spec, spec) == []


# --- properties ----------------------------------------------------------------------------------
names = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
cell_lists = st.lists(names, min_size=1, max_size=4, unique=True)
pools = st.dictionaries(names, cell_lists, min_size=1, max_size=4)


def _spec_with(pool_cells, sizes=None):
    return model.load_spec(corpus.spec({"pools": None}) | {"pools": {
        p: {"cells": cells, **({"storage": {"size": sizes[p]}} if sizes else {})}
        for p, cells in pool_cells.items()
    }})


@settings(max_examples=150, deadline=None)
@given(old=pools, new=pools)
def test_transition_errors_match_set_inclusion(old, new):
    errors = model.check_transition(_spec_with(old), _spec_with(new))
    pools_removed = not set(old) <= set(new)
    cells_removed = sorted(p for p in set(old) & set(new) if not set(old[p]) <= set(new[p]))
    assert any("(rule: pools-append-only)" in e for e in errors) == pools_removed
    flagged = sorted(e.split(".")[2] for e in errors if "(rule: cells-append-only)" in e)
    assert flagged == cells_removed


units = st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi", "Ti"])
multipliers = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@settings(max_examples=200, deadline=None)
@given(a=st.integers(1, 5000), ua=units, b=st.integers(1, 5000), ub=units)
def test_storage_grow_only_compares_exact_values_across_units(a, ua, b, ub):
    old = _spec_with({"p": ["c"]}, {"p": f"{a}{ua}"})
    new = _spec_with({"p": ["c"]}, {"p": f"{b}{ub}"})
    shrinks = b * multipliers[ub] < a * multipliers[ua]
    assert any("storage-grow-only" in e for e in model.check_transition(old, new)) == shrinks


@settings(max_examples=200, deadline=None)
@given(st.integers(-100, 100))
def test_replicas_accepted_exactly_in_range(n):
    """1..32 by the field's bounds; a v0.1.0 shard of one pod is refused by the durability rules instead."""
    spec = corpus.spec({"pools": {"default": {"replicasPerCell": n}}})
    if 2 <= n <= 32:
        assert model.load_spec(spec).pools["default"].replicas_per_cell == n
    elif n == 1:
        assert [e.split(": ")[0] for e in _errors(spec)] == ["spec.durabilityPolicy"]
    else:
        assert any(e.startswith("spec.pools.default.replicasPerCell:") for e in _errors(spec))


_CELLS = st.lists(st.sampled_from(["z1", "z2", "z3", "z4"]), min_size=1, max_size=4, unique=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.tuples(_CELLS, st.integers(1, 3)), min_size=1),
       st.booleans(), st.integers(1, 12))
def test_the_durability_policy_is_refused_exactly_when_the_pools_cannot_meet_it(pools, multi_cell, n):
    """AT_LEAST_<n>: n pods over every pool; MULTI_CELL_AT_LEAST_<n>: n distinct cells (v0.1.0's
    CheckAchievable), counted once however many pools list a cell."""
    policy = f"{'MULTI_CELL_' if multi_cell else ''}AT_LEAST_{n}"
    spec = corpus.spec({"durabilityPolicy": policy, "pools": {
        "default": None, **{name: {"cells": cells, "replicasPerCell": r} for name, (cells, r) in pools.items()}}})
    have = (len({c for cells, _ in pools.values() for c in cells}) if multi_cell
            else sum(len(cells) * r for cells, r in pools.values()))
    try:
        model.load_spec(spec)
        errors: list[str] = []
    except model.SpecError as error:
        errors = error.errors
    refused = [e for e in errors if "durability-policy-achievable" in e]
    assert bool(refused) == (have < n), (policy, pools, errors)
    unit = "cell(s)" if multi_cell else "pod(s)"
    assert all(e.startswith("spec.durabilityPolicy: ") and f"{policy} with {have} {unit}" in e for e in refused)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.eEKMGTPinumk+- ", max_size=8))
def test_quantity_parse_agrees_with_the_pattern(text):
    """Parsed exactly when the pattern matches, except what Kubernetes cannot hold: fractional
    exponents and magnitudes above 2^63-1 (each refused with its reason)."""
    if not quantity.is_quantity(text):
        assert quantity.try_parse(text) is None
        return
    try:
        assert abs(quantity.parse(text)) <= quantity.MAX
    except ValueError as exc:
        assert "out of range" in str(exc) or "exponent must be a whole number" in str(exc)


@pytest.mark.parametrize(("text", "problem"), [
    ("1e1000000", "out of range"), ("-1e400", "out of range"), ("8Ei", "out of range"),
    ("9223372036854775808", "out of range"), ("1e1.5", "exponent must be a whole number"),
])
def test_quantity_beyond_kubernetes_is_refused_with_the_reason(text, problem):
    with pytest.raises(ValueError, match=problem):
        quantity.parse(text)
    errors = _errors(corpus.spec({"pools": {"default": {"storage": {"size": text}}}}))
    assert any(e.startswith("spec.pools.default.storage.size:") and problem in e for e in errors)


def test_quantity_at_the_bounds():
    assert quantity.parse("7Ei") == Decimal(7 * 2**60)
    assert quantity.parse("9223372036854775807") == quantity.MAX
    assert quantity.parse("1e-1000000") < Decimal("1e-300")  # tiny, not an error


def test_quantity_values():
    assert quantity.parse("1Gi") == Decimal(2**30)
    assert quantity.parse("1500m") == Decimal("1.5")
    assert quantity.parse("1e3") == Decimal(1000)
    assert quantity.parse("1.5G") == Decimal(1_500_000_000)
    assert quantity.try_parse("1 Gi") is None


@pytest.mark.parametrize(("field", "text", "problem"), [
    ("full", "61 * * * *", "Bad minute"), ("differential", "0 1 * * 8", "Bad day-of-week"),
    ("differential", "0 1 31 2 *", "Bad day-of-month"),
])
def test_a_bad_backup_schedule_is_refused_naming_its_field(field, text, problem):
    errors = _errors(corpus.spec({"backup": {"schedules": {field: text}}}))
    assert any(e.startswith(f"spec.backup.schedules.{field}:") and problem in e for e in errors), errors


def test_a_backup_schedule_cronsim_accepts_is_kept():
    spec = model.load_spec(corpus.spec({"backup": {"schedules": {"full": "*/15 2 * * 1-5"}}}))
    assert spec.backup.schedules.full == "*/15 2 * * 1-5"
