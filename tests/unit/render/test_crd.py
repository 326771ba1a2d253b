"""The generated CRD: structural schema, every model rule published as CEL, no scale subresource."""

from __future__ import annotations

import inspect
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import model, rules
from ansible_collections.multigres.pools.plugins.module_utils.spec import security as model_security

from multigres_pools.install import crd


def _walk(node, path="$"):
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def _version():
    (version,) = crd.shard_crd()["spec"]["versions"]
    return version


def test_identity_subresources_and_columns():
    doc = crd.shard_crd()
    assert doc["metadata"]["name"] == "multigresshards.pools.multigres.com"
    names = doc["spec"]["names"]
    assert (names["kind"], names["plural"], names["shortNames"]) == ("MultigresShard", "multigresshards", ["mgs"])
    version = _version()
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}  # and no scale: see the PDB in docs/api.md
    assert {c["name"] for c in version["additionalPrinterColumns"]} >= {"Phase", "Ready", "Age"}


def _schemas(node, path="$"):
    """Every schema node (not the maps that hold them)."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from _schemas(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _schemas(node[key], f"{path}[{key}]")


def test_schema_is_structural():
    schema = _version()["schema"]["openAPIV3Schema"]
    count = 0
    for path, node in _schemas(schema):
        count += 1
        assert not {"$ref", "anyOf", "oneOf", "allOf", "const", "title", "propertyNames"} & node.keys(), path
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"untyped {path}"
        if "properties" in node or "additionalProperties" in node:
            assert node.get("type") == "object", path
            assert not ("properties" in node and "additionalProperties" in node), path
        if "items" in node:
            assert node.get("type") == "array", path
    assert count > 100


def _all_rules():
    classes = [c for module in (model, model_security) for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, rules.SpecModel) and c is not rules.SpecModel]
    return {r.name: r for c in classes for r in (*c.__rules__, *c.__transitions__)}


def test_every_python_rule_is_published_as_cel_exactly_once_per_use():
    published = [v for _, node in _walk(crd.shard_crd()) if isinstance(node, dict)
                 for v in node.get("x-kubernetes-validations", [])]
    by_name = {}
    for entry in published:
        name = entry["message"].rsplit("(rule: ", 1)[1].rstrip(")")
        by_name.setdefault(name, []).append(entry)
    for name, rule in _all_rules().items():
        assert name in by_name, f"rule {name} missing from the CRD"
        assert all(e["rule"] == rule.cel for e in by_name[name])
    transitions = {n for n, r in _all_rules().items() if isinstance(r, rules.TransitionRule)}
    assert transitions == {"pools-append-only", "cells-append-only", "cell-topology-immutable", "storage-grow-only",
                           "password-secret-immutable", "clone-from-at-creation"}
    for name in transitions:
        assert all("oldSelf" in e["rule"] for e in by_name[name])


def test_defaults_and_key_rules_come_from_the_model():
    spec = _version()["schema"]["openAPIV3Schema"]["properties"]["spec"]
    pool = spec["properties"]["pools"]["additionalProperties"]
    assert pool["properties"]["replicasPerCell"] == {
        "default": 3, "description": "Pods (and data PVCs) per cell.", "maximum": 32, "minimum": 1, "type": "integer"}
    assert pool["properties"]["cells"]["x-kubernetes-list-type"] == "set"
    assert spec["properties"]["pools"]["x-kubernetes-validations"][0]["rule"].startswith("self.all(k, k.matches(")
    assert spec["required"] == ["clusterName", "globalTopoServer", "pools"]
    assert spec["properties"]["databaseName"]["default"] == "postgres"


def test_status_schema_keeps_unknown_fields_and_has_no_defaults_inside():
    """Only `status: {}` itself is defaulted (Flux's CEL needs a status object); nothing inside it."""
    status = _version()["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert status["default"] == {}
    assert [path for path, _ in _walk(status) if path.endswith(".default")] == ["$.default"]
    assert status["properties"]["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_group_comes_from_keys():
    assert crd.shard_crd()["spec"]["group"] == keys.API_GROUP


def test_api_reference_in_docs_is_current():
    from multigres_pools.install import apidoc

    text = (Path(__file__).resolve().parents[3] / "docs" / "api.md").read_text()
    assert apidoc.reference() in text, (
        "docs/api.md is stale: .venv/bin/python -m "
        "multigres_pools.install.apidoc docs/api.md")
    for name in _all_rules():
        assert f"(rule: {name})" in text
    for field in ("spec.pools.<name>.replicasPerCell", "spec.backup.pgbackrestTLS.mode", "spec.cellTopologyLabels"):
        assert f"`{field}`" in text


def test_every_property_of_the_checked_in_crd_has_a_description():
    """`kubectl explain multigresshard.<any field>` never answers `<no description>`, status included.
    `metadata` is the exception the apiserver imposes: it refuses anything there but `type`, and
    explains ObjectMeta from its own schema."""
    import yaml

    path = Path(__file__).resolve().parents[3] / "manifests" / "crd.yaml"
    (version,) = yaml.safe_load(path.read_text())["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    undocumented, count = [], 0
    for where, node in _schemas(schema):
        for name, prop in node.get("properties", {}).items():
            count += 1
            if where == "$" and name == "metadata":
                assert prop == {"type": "object"}
            elif not str(prop.get("description", "")).strip():
                undocumented.append(f"{where}.{name}")
    assert count > 150
    assert not undocumented, f"{len(undocumented)} properties without a description: {undocumented}"
