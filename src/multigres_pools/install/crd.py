"""The MultigresShard CustomResourceDefinition, generated from `model.py` (never written by hand).

Pydantic's JSON schema is turned into a Kubernetes structural schema: references inlined, nullable
unions collapsed to the plain type (an unset field is simply absent), titles dropped, `const` made
an `enum`, free-form maps marked `x-kubernetes-preserve-unknown-fields`, and constraints on map
keys (which structural schemas cannot express) turned into CEL rules. The models' own rules arrive
as `x-kubernetes-validations` through `rules.SpecModel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.requirements_guard import runtime_requirements

if TYPE_CHECKING:
    from pydantic import BaseModel

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from ansible_collections.multigres.pools.plugins.module_utils.spec.model import (
        MultigresShardSpec,
        MultigresShardStatus,
    )

_DROP = {"title", "additionalProperties", "propertyNames", "patternProperties", "$defs", "const"}

PRINTER_COLUMNS = [
    {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterName"},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Replicas", "type": "integer", "jsonPath": ".status.readyReplicas", "description": "Ready pool pods"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _key_rule(names: dict[str, Any]) -> dict[str, str]:
    tests, words = [], []
    if "pattern" in names:
        tests.append(f"k.matches('{names['pattern']}')")
        words.append(f"match {names['pattern']}")
    if "maxLength" in names:
        tests.append(f"size(k) <= {names['maxLength']}")
        words.append(f"be at most {names['maxLength']} characters")
    return {
        "rule": f"self.all(k, {' && '.join(tests)})",
        "message": f"keys must {' and '.join(words)} (rule: map-key-format)",
        "reason": "FieldValueInvalid",
    }


def _structural(node: Any, defs: dict[str, Any], nested: bool = False) -> Any:
    """One JSON-schema node as a structural OpenAPI v3 node (recursive).

    `nested`: the node sits inside a map value or a list item. Map-key CEL checks are only emitted
    outside those: the apiserver's cost estimate multiplies a key regex over every outer entry
    (with map keys of unknown length) and rejects the CRD. Nested keys (node labels, resource names)
    are still checked by the Python model, and by the apiserver when the pod is created.
    """
    if isinstance(node, list):
        return [_structural(n, defs, nested) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs, nested)
    if "patternProperties" in node:
        # Pydantic's spelling of a map with constrained keys: one pattern, one value schema.
        ((pattern, value),) = node["patternProperties"].items()
        names = {**node.get("propertyNames", {}), "pattern": pattern}
        rest = {k: v for k, v in node.items() if k != "patternProperties"}
        return _structural({**rest, "additionalProperties": value, "propertyNames": names}, defs, nested)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        if len(options) != 1:
            raise ValueError(f"cannot express a union in a structural schema: {node['anyOf']}")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        return _structural({**options[0], **rest}, defs, nested)

    out: dict[str, Any] = {
        k: _structural(v, defs, nested or k == "items") for k, v in node.items() if k not in _DROP
    }
    if "const" in node:
        out["enum"] = [node["const"]]
    if out.get("default", 0) is None:
        del out["default"]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        out["additionalProperties"] = _structural(extra, defs, nested=True)
    elif extra is True or extra == {}:
        out["x-kubernetes-preserve-unknown-fields"] = True  # free-form (affinity) or open (status)
    if "propertyNames" in node and not nested:
        out.setdefault("x-kubernetes-validations", []).insert(0, _key_rule(node["propertyNames"]))
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _materialize_defaults(node: Any) -> Any:
    """Spell out `default: {}` of nested objects with their fields' defaults (recursively).

    The apiserver checks a default against the object's CEL rules as written, without defaulting
    inside it first; `{}` would fail every rule that reads a defaulted field."""
    if isinstance(node, list):
        return [_materialize_defaults(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _materialize_defaults(v) for k, v in node.items()}
    if out.get("default") == {} and "properties" in out:
        out["default"] = {name: prop["default"] for name, prop in out["properties"].items() if "default" in prop}
    return out


def _strip_defaults(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_strip_defaults(v) for v in node]
    return node


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema: dict[str, Any] = _structural(raw, raw.get("$defs", {}))  # an object schema stays one
    return schema


def shard_crd() -> dict[str, Any]:
    """The complete CRD manifest: status subresource, no scale subresource (see docs/api.md)."""
    spec_schema = _materialize_defaults(openapi_schema(MultigresShardSpec))
    # Status belongs to the engine: no field inside it has a default, or the apiserver would invent
    # one. Only `status: {}` itself is defaulted, so a new CR has a status object before the first
    # pass: Flux's health expressions read `status.*`, and CEL errors on an absent variable.
    status_schema = {**_strip_defaults(openapi_schema(MultigresShardStatus)), "default": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{keys.SHARD_PLURAL}.{keys.API_GROUP}",
            "labels": {keys.LABEL_APP_NAME: "multigres-pools", keys.LABEL_APP_PART_OF: keys.PART_OF},
        },
        "spec": {
            "group": keys.API_GROUP,
            "names": {
                "kind": keys.SHARD_KIND,
                "listKind": f"{keys.SHARD_KIND}List",
                "plural": keys.SHARD_PLURAL,
                "singular": keys.SHARD_KIND.lower(),
                "shortNames": [keys.SHARD_SHORT_NAME],
                "categories": ["multigres"],
            },
            "scope": "Namespaced",
            "versions": [{
                "name": keys.API_VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": PRINTER_COLUMNS,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A Multigres shard whose pool pods are managed without StatefulSets.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string", "description": f"{keys.API_GROUP_VERSION}."},
                        "kind": {"type": "string", "description": f"{keys.SHARD_KIND}."},
                        # The apiserver refuses anything on metadata but its type (kubectl explain
                        # shows ObjectMeta's own documentation there).
                        "metadata": {"type": "object"},
                        "spec": spec_schema,
                        "status": status_schema,
                    },
                }},
            }],
        },
    }
