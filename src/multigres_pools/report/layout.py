"""Text layout for the status screen: wrapping that never drops a character, labelled fields and
aligned tables. Cells carry a style name; `paint` colours them after they are padded."""

from __future__ import annotations

import textwrap

from .colour import PLAIN, Paint

Cell = tuple[str, str]  # text, style ("" for none)
LABEL_WIDTH = 18
INDENT = "  "


def wrap(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """`text` over as many lines as `width` needs: long words are split, never cut."""
    return textwrap.wrap(text, width=max(width, len(indent) + 20), initial_indent=indent,
                         subsequent_indent=indent if hang is None else hang,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def field(label: str, value: str, width: int, paint: Paint = PLAIN, style: str = "") -> list[str]:
    """`  label             value`, the value wrapped under itself."""
    lead = f"{INDENT}{label:<{LABEL_WIDTH}} "
    lines = wrap(lead + value, width, hang=" " * len(lead))
    if style:
        lines = [lines[0][:len(lead)] + paint(style, lines[0][len(lead):]), *(paint(style, x) for x in lines[1:])]
    return lines


def table(header: list[str], rows: list[list[Cell]], paint: Paint = PLAIN) -> list[str]:
    widths = [max([len(h), *(len(row[i][0]) for row in rows)]) for i, h in enumerate(header)]

    def line(cells: list[Cell]) -> str:
        *rest, (last, last_style) = cells  # the last column is not padded: no trailing blanks
        padded = [paint(style, text) + " " * (widths[i] - len(text)) for i, (text, style) in enumerate(rest)]
        return INDENT + "  ".join([*padded, paint(last_style, last)])

    return [line([(h, "bold") for h in header]), *(line(row) for row in rows)]


def table_width(header: list[str], rows: list[list[Cell]]) -> int:
    return max(len(line) for line in table(header, rows))
