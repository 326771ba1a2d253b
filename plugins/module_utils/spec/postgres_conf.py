"""What may appear in a postgresql.conf value (pure, stdlib only: the renderer checks it too)."""

from __future__ import annotations

import re

# postgresql.conf has no way to continue a value on the next line: a line break (or any other
# control character) in a value could only end it and start a setting of the attacker's choosing.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The same class for the CRD's CEL rule.
CONTROL_CEL = r"'[\\x00-\\x1f\\x7f]'"


def has_control_character(value: str) -> bool:
    return _CONTROL.search(value) is not None
