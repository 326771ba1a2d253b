"""Metric names in alert expressions, and the series names a /metrics page exports.

`metric_names` uses the `promql-parser` package (a port of Prometheus' own parser) when it is
installed, so an expression that does not parse fails; otherwise a tokenizer that knows PromQL's
keywords and label lists. Both give the same answer on our rules (a test checks it when both run).
"""

from __future__ import annotations

import re
from typing import Any

_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
             "offset", "atan2", "inf", "nan"}
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _names_by_tokens(expr: str) -> set[str]:
    text = re.sub(r'"(?:\\.|[^"\\])*"', "", expr)  # string literals (label values)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = _LABEL_LIST.sub("", text)
    names = set()
    for match in _IDENT.finditer(text):
        following = text[match.end():].lstrip()
        word = match.group(0)
        if word.lower() in _KEYWORDS or following.startswith("("):  # a keyword, a function or aggregation
            continue
        if re.fullmatch(r"[0-9.]+[a-z]*", word) or text[match.start() - 1:match.start()].isdigit():
            continue
        names.add(word)
    return names


def parser() -> Any | None:
    try:
        import promql_parser
    except ImportError:
        return None
    return promql_parser


def _names_by_parser(promql_parser: Any, expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)  # raises on a syntax error
    return names


def metric_names(expr: str) -> set[str]:
    found = parser()
    return _names_by_parser(found, expr) if found else _names_by_tokens(expr)


def alert_metrics(alerts: Any, prefix: str) -> set[str]:
    """The metric names starting with `prefix` that the expressions of `alerts` read."""
    return {n for alert in alerts for n in metric_names(alert.expr) if n.startswith(prefix)}


def exported_series(exposition: str) -> set[str]:
    """Series names a Prometheus text exposition can carry, from its `# TYPE` lines (present even before a
    labelled metric has its first child): a histogram's _bucket/_sum/_count, a counter's _total."""
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            if kind.strip() == "counter" and not name.endswith("_total"):
                name += "_total"
            names.update(f"{name}{suffix}" for suffix in suffixes.get(kind.strip(), ("",)))
    return names
