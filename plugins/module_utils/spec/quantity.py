"""Kubernetes resource quantities ("10Gi", "500m", "1e3"): the format and exact values.

PATTERN is the one the Kubernetes OpenAPI schema uses for `resource.Quantity`, so the CRD and the
Python model accept the same strings; `parse` gives an exact Decimal for grow-only checks and for
comparing live PVC sizes with desired ones (the planner uses `try_parse`). `parse` also refuses what
the pattern lets through but Kubernetes cannot hold: a magnitude above 2^63-1 (apimachinery caps
it, so the object would silently change) and a fractional exponent (`1e1.5`: ParseQuantity fails).
Without that bound, `1e1000000` overflowed Python's decimal context.
"""

from __future__ import annotations

import re
from decimal import Decimal

MAX = Decimal(2**63 - 1)

PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_RE = re.compile(PATTERN)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)")
_EXPONENT = re.compile(r"^[+-]?[0-9]+$")

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def is_quantity(text: str) -> bool:
    return bool(_RE.match(text))


def parse(value: str | int | float) -> Decimal:
    """The exact value of a quantity; ValueError for anything the apiserver would reject."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        number = Decimal(str(value))
        if not number.is_finite() or abs(number) > MAX:
            raise ValueError(f"{value!r} is out of range: Kubernetes quantities are at most 2^63-1 ({MAX})")
        return number
    if not is_quantity(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (for example 10Gi, 500Mi, 1.5G)")
    found = _NUMBER.match(value)
    if found is None:  # guaranteed by PATTERN
        raise AssertionError(f"{value!r} passed PATTERN but has no number")
    base = Decimal(found.group(0))
    suffix = value[found.end():]
    if suffix in _BINARY:
        exact = base * (Decimal(1024) ** _BINARY[suffix])
    else:
        exponent = _DECIMAL.get(suffix)
        if exponent is None:  # e/E exponent
            digits = suffix[1:]
            if not _EXPONENT.match(digits) or len(digits) > 1000:
                raise ValueError(f"{value!r}: the exponent must be a whole number (Kubernetes cannot parse "
                                 f"{suffix[:20]!r})")
            # Clamped: any exponent past 400 is out of range (or rounds to 0) whatever the mantissa.
            exponent = max(-400, min(400, int(digits)))
        exact = base.scaleb(exponent)
    if abs(exact) > MAX:
        raise ValueError(f"{value!r} is out of range: Kubernetes quantities are at most 2^63-1 ({MAX})")
    return exact


def try_parse(value: object) -> Decimal | None:
    """parse(), or None for anything that is not a quantity."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return parse(value)
    except ValueError:
        return None
