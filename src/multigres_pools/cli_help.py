"""What every `multigres-pools` parser shares: defaults shown in --help, an examples epilog kept as written.

    p = cli_help.parser("multigres-pools status", __doc__, EXAMPLES)
"""

from __future__ import annotations

import argparse
from typing import Any

# `multigres-pools --help` shows the commands; their own --help shows their options and examples.
_NO_DEFAULT: tuple[object, ...] = (None, False, [], argparse.SUPPRESS)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Appends `(default: X)` to an option's help unless it has none worth showing (unset, a flag's
    False, an empty list) or its text already says it; keeps descriptions and epilogs as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "%(default)" in text or "default:" in text or any(action.default is d for d in _NO_DEFAULT):
            return text
        if action.default == [] or not action.option_strings or action.nargs == 0:  # flags say it themselves
            return text
        return f"{text} (default: %(default)s)"


def examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def parser(prog: str, description: str, epilog: str, **kwargs: Any) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                   formatter_class=HelpFormatter, **kwargs)
