"""The field and rule reference of docs/api.md, generated from the CRD schema (so it cannot drift).

    .venv/bin/python -m multigres_pools.install.apidoc docs/api.md

rewrites the part of docs/api.md between the BEGIN/END markers; a unit test fails when it is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from .crd import shard_crd

BEGIN = "<!-- BEGIN GENERATED REFERENCE (install/apidoc.py) -->"
END = "<!-- END GENERATED REFERENCE -->"


def _type(node: dict[str, Any]) -> str:
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    kind: str = node.get("type", "any")
    if kind == "array":
        return f"list of {_type(node.get('items', {}))}"
    if kind == "object" and "additionalProperties" in node:
        return f"map of {_type(node['additionalProperties'])}"
    if kind == "object" and node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node:
        return "object (free-form)"
    return kind


def _constraints(node: dict[str, Any]) -> str:
    words = []
    for key, word in (("minimum", ">="), ("maximum", "<="), ("minLength", "min length"),
                      ("maxLength", "max length"), ("minItems", "min items"), ("maxItems", "max items"),
                      ("minProperties", "min entries"), ("maxProperties", "max entries")):
        if key in node:
            words.append(f"{word} {node[key]}")
    if "pattern" in node:
        words.append(f"pattern `{node['pattern']}`")
    if node.get("x-kubernetes-list-type") == "set":
        words.append("no duplicates")
    return ", ".join(words)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(node: dict[str, Any], path: str, required: bool, out: list[str], rules: list[str]) -> None:
    default = f"`{_cell(str(node['default']))}`" if "default" in node and node["default"] != {} else ""
    req = "yes" if required else ""
    out.append(f"| `{path}` | {_type(node)} | {req} | {default} | {_cell(_constraints(node))} | "
               f"{_cell(node.get('description', ''))} |")
    _rules(node, path, rules)
    child = node.get("additionalProperties")
    if isinstance(child, dict) and child.get("type") == "object" and "properties" in child:
        _rules(child, f"{path}.<name>", rules)
        _walk(child, f"{path}.<name>", out, rules)
    items = node.get("items")
    if isinstance(items, dict) and "properties" in items:
        _rules(items, f"{path}[]", rules)
        _walk(items, f"{path}[]", out, rules)
    if "properties" in node:
        _walk(node, path, out, rules)


def _rules(node: dict[str, Any], path: str, rules: list[str]) -> None:
    for rule in node.get("x-kubernetes-validations", []):
        where = f"{path}{rule.get('fieldPath', '')}"
        rules.append(f"| `{where}` | {_cell(rule['message'])} | `{_cell(rule['rule'])}` |")


def _walk(node: dict[str, Any], path: str, out: list[str], rules: list[str]) -> None:
    required = set(node.get("required", []))
    for name in sorted(node.get("properties", {})):
        _rows(node["properties"][name], f"{path}.{name}", name in required, out, rules)


def reference() -> str:
    spec = shard_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rows: list[str] = []
    rules: list[str] = []
    _rules(spec, "spec", rules)
    _walk(spec, "spec", rows, rules)
    return "\n".join([
        BEGIN,
        "### Fields",
        "",
        "| Field | Type | Required | Default | Constraints | Description |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "### Rules (CEL in the CRD, the same checks in Python)",
        "",
        "| Where | Message (rule) | CEL |",
        "|---|---|---|",
        *rules,
        END,
    ])


def update(path: str | Path) -> bool:
    """Rewrite the generated block of `path`; True when it changed."""
    doc = Path(path)
    text = doc.read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    new = f"{head}{reference()}{tail}"
    if new != text:
        doc.write_text(new)
    return new != text


if __name__ == "__main__":
    sys.stdout.write("updated\n" if update(sys.argv[1]) else "up to date\n")
