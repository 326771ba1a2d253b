"""Kubernetes resource quantities ("10Gi", "500m", "1e3"): the format and exact values.

PATTERN is the one the Kubernetes OpenAPI schema uses for `resource.Quantity`, so the CRD and the
Python model accept exactly the same strings; `parse` gives an exact Decimal for grow-only checks
and for comparing live PVC sizes with desired ones (the planner uses `try_parse`).
"""

from __future__ import annotations

import re
from decimal import Decimal

PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_RE = re.compile(PATTERN)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)")

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def is_quantity(text: str) -> bool:
    return bool(_RE.match(text))


def parse(value: str | int | float) -> Decimal:
    """The exact value of a quantity; ValueError for anything the apiserver would reject."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not is_quantity(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (for example 10Gi, 500Mi, 1.5G)")
    number = _NUMBER.match(value)
    assert number is not None  # guaranteed by PATTERN
    base = Decimal(number.group(0))
    suffix = value[number.end():]
    if suffix in _BINARY:
        return base * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return base.scaleb(_DECIMAL[suffix])
    return base * (Decimal(10) ** Decimal(suffix[1:]))  # e/E exponent, possibly fractional


def try_parse(value: object) -> Decimal | None:
    """parse(), or None for anything that is not a quantity."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return parse(value)
    except ValueError:
        return None
