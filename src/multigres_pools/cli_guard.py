"""The last word of a `multigres-pools` command: Ctrl-C, a closed pipe and a bug each end in one line on
stderr and a documented exit code (docs/cli.md, "Exit codes"), never a traceback on the terminal.

    return cli_guard.run(lambda: command(argv), "multigres-pools", keep_tracebacks=False)

The agent and the operator keep a bug's traceback (`keep_tracebacks`): their output is a log, read
after the fact, where the traceback is what explains a crash.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Callable

EXIT_BUG, EXIT_INTERRUPTED, EXIT_PIPE_CLOSED = 3, 130, 141  # 128 + SIGINT, 128 + SIGPIPE, as shells report them


def run(command: Callable[[], int], prog: str, *, keep_tracebacks: bool = False) -> int:
    try:
        return command()
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... | head` stopped reading: nothing more to say
        # Python would report the closed pipe once more when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except Exception as exc:
        if keep_tracebacks:
            raise
        print(f"{prog}: internal error (a bug): {type(exc).__name__}: {exc}; {_saved(traceback.format_exc())}",
              file=sys.stderr)
        return EXIT_BUG


def _saved(text: str) -> str:
    try:
        with tempfile.NamedTemporaryFile("w", prefix="multigres-pools-crash-", suffix=".txt", delete=False) as f:
            f.write(text)
    except OSError:
        return "the traceback follows; please report it\n" + text
    return f"please report it with the traceback saved in {f.name}"
