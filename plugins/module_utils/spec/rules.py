"""Validation rules that live twice by construction: once as CEL for the apiserver, once in Python.

A rule is written once, next to the model it guards, as a pair (CEL expression, Python predicate)
sharing one message. `SpecModel` runs the Python half on every validation and publishes the CEL half
as `x-kubernetes-validations` in its JSON schema, from which `install/crd.py` builds the CRD. Transition
rules (CEL `oldSelf`) run in Python through `transition_errors(old, new)`, which walks exactly the
parts of the spec that CEL can correlate: nested objects and map values with the same key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from . import quantity

RULE_ERROR = "spec_rule"


@dataclass(frozen=True)
class Rule:
    """An invariant of one object. `check(model)` is the Python twin of `cel` (which sees `self`)."""

    name: str
    cel: str
    message: str
    check: Callable[..., bool]  # (model); a TransitionRule's takes (old, new)
    field_path: str = ""  # relative to the object, CEL fieldPath syntax: ".pools", ".storage.size"
    reason: str = "FieldValueInvalid"
    # Optional: what exactly is wrong (the offending map keys, say), appended to the message as
    # ": <detail>". `detail(model)` is the Python half (every culprit); `detail_cel` a CEL string
    # expression (the apiserver's cost estimate refuses joining a list of map keys, so CEL names one).
    detail: Callable[[Any], str] | None = None
    detail_cel: str = ""

    def text(self, model: Any) -> str:
        """The message Python reports for `model`, with the detail when the rule has one."""
        detail = f": {self.detail(model)}" if self.detail is not None else ""
        return f"{self.message}{detail}"

    def schema(self) -> dict[str, str]:
        out = {"rule": self.cel, "message": f"{self.message} (rule: {self.name})", "reason": self.reason}
        if self.detail_cel:
            # The apiserver falls back to `message` when the expression fails to evaluate.
            quoted = self.message.replace("\\", "\\\\").replace("'", "\\'")
            out["messageExpression"] = f"'{quoted}: ' + {self.detail_cel} + ' (rule: {self.name})'"
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


@dataclass(frozen=True)
class TransitionRule(Rule):
    """An invariant between the stored object and an update. `check(old, new)`; CEL sees `oldSelf`."""

    check: Callable[[Any, Any], bool]
    reason: str = "FieldValueForbidden"


def wire_value(model: BaseModel, wire_name: str) -> Any:
    """The value of the field a CEL rule calls `wire_name` (its alias)."""
    for name, info in type(model).model_fields.items():
        if (info.alias or name) == wire_name:
            return getattr(model, name)
    raise KeyError(wire_name)


def required_when(name: str, switch: str, value: str, needed: str, message: str) -> Rule:
    """`needed` must be set when `switch == value` (wire names); CEL and Python built from one spec."""
    return Rule(
        name=name,
        cel=f"self.{switch} != '{value}' || has(self.{needed})",
        message=message,
        check=lambda m: wire_value(m, switch) != value or wire_value(m, needed) is not None,
        field_path=f".{needed}",
    )


def _add_rules_to_schema(schema: dict[str, Any], cls: type[SpecModel]) -> None:
    rules = [r.schema() for r in (*cls.__rules__, *cls.__transitions__)]
    if rules:
        schema["x-kubernetes-validations"] = rules


class SpecModel(BaseModel):
    """Base of every spec model: camelCase on the wire, unknown fields rejected, rules enforced."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # Turns a sub-model field's `{}` default into that model. Fields with such a default repeat
        # validate_default=True: only then does pydantic's typing accept a dict for a model-typed field.
        validate_default=True,
        json_schema_extra=_add_rules_to_schema,
    )

    __rules__: ClassVar[tuple[Rule, ...]] = ()
    __transitions__: ClassVar[tuple[TransitionRule, ...]] = ()

    @model_validator(mode="after")
    def _check_rules(self) -> SpecModel:
        for rule in type(self).__rules__:
            if not rule.check(self):
                raise PydanticCustomError(
                    RULE_ERROR, "{message} (rule: {name})",
                    {"message": rule.text(self), "name": rule.name, "field_path": rule.field_path},
                )
        return self


def _join(path: str, field_path: str) -> str:
    return f"{path}{field_path}" if field_path.startswith("[") else f"{path}{field_path}".rstrip(".")


def transition_errors(old: SpecModel, new: SpecModel, path: str) -> list[str]:
    """Every transition rule broken between `old` and `new`, as 'field.path: message (rule: name)'."""
    errors = [
        f"{_join(path, rule.field_path)}: {rule.message} (rule: {rule.name})"
        for rule in type(new).__transitions__
        if not rule.check(old, new)
    ]
    for name, info in type(new).model_fields.items():
        key = info.alias or name
        old_value, new_value = getattr(old, name), getattr(new, name)
        if isinstance(old_value, SpecModel) and type(old_value) is type(new_value):
            errors += transition_errors(old_value, new_value, f"{path}.{key}")
        elif isinstance(old_value, Mapping) and isinstance(new_value, Mapping):
            for item in sorted(old_value.keys() & new_value.keys()):
                o, n = old_value[item], new_value[item]
                if isinstance(o, SpecModel) and type(o) is type(n):
                    errors += transition_errors(o, n, f"{path}.{key}.{item}")
    return errors


def _segment(part: Any) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    if part == "[key]":
        return " (map key)"
    text = str(part)
    # A key that is empty or holds spaces, control characters or the ': ' that ends the path is quoted.
    plain = text and text.isprintable() and not any(c.isspace() or c == ":" for c in text)
    return f".{text}" if plain else f"[{text!r}]"


def _message(err: Mapping[str, Any]) -> str:
    """Pydantic's message, but in words where it would print a regular expression."""
    if err["type"] == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") == quantity.PATTERN:
        return (f"{err['input']!r} is not a Kubernetes quantity: a number with a binary suffix (Ki, Mi, Gi, Ti) "
                "or a decimal one (k, M, G, T), e.g. 10Gi")
    return str(err["msg"])


def format_validation_error(exc: Any, root: str) -> list[str]:
    """Pydantic errors as 'spec.pools.default.cells: message' lines, in a stable order."""
    lines = []
    for err in exc.errors(include_url=False):
        path = root + "".join(_segment(p) for p in err["loc"])
        ctx = err.get("ctx") or {}
        if err["type"] == RULE_ERROR and ctx.get("field_path"):
            path = _join(path, ctx["field_path"])
        lines.append(f"{path.lstrip('.') or '(document)'}: {_message(err)}")
    return sorted(set(lines))
