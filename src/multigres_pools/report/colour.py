"""Colour for the status screen: on a terminal unless NO_COLOR (https://no-color.org) or TERM=dumb says
otherwise; `--color always|never` overrides both. Styles are applied after layout, so widths and
wrapping only ever count visible characters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

CHOICES = ("auto", "always", "never")
_CODES = {"good": "32", "warn": "33", "bad": "31", "bold": "1", "dim": "2"}


@dataclass(frozen=True)
class Paint:
    on: bool = False

    def __call__(self, style: str, text: str) -> str:
        if not (self.on and style and text):
            return text
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


PLAIN = Paint(False)


def wanted(choice: str, stream: TextIO, environ: Mapping[str, str]) -> bool:
    if choice in ("always", "never"):
        return choice == "always"
    return stream.isatty() and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"
