"""`multigres-pools` run inside the test process: the `main()` the console script calls, its exit code
(argparse's `SystemExit` included) and everything it wrote to `sys.stdout` and `sys.stderr`.

A process of its own costs about 0.3 s of interpreter start-up and imports per call, which made the
CLI's failure and help tests a fifth of `make unit`'s CPU. Tests that need what only a process has
(a signal, a hash seed, the console script itself, a daemon's logging set-up) still start one."""

from __future__ import annotations

import contextlib
import io
import subprocess

from multigres_pools import cli


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """`multigres-pools ARGS...` as `subprocess.run(..., capture_output=True, text=True)` would report it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse's usage errors, --help and --version
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # the interpreter prints a message code and exits 1
                print(exc.code, file=err)
                code = 1
    return subprocess.CompletedProcess(["multigres-pools", *args], code, out.getvalue(), err.getvalue())
