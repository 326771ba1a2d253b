"""Running one build step: a failure names the step and ends with the tail of its output."""

from __future__ import annotations

import fnmatch
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

OUTPUT_TAIL = 30  # lines of a failed step's output kept in the error


class ImageBuildError(RuntimeError):
    """A build step failed; the message names the step, the command and its last output lines."""


def run(argv: list[str], step: str, *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
        log: Path | None = None, timeout: float = 3600) -> str:
    """Run argv and return its output (stdout and stderr together). With `log`, the output goes
    there as it is written (a long build can be followed with `tail -f`)."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        raise ImageBuildError(f"{step}: {argv[0]} not found on PATH (make setup installs it)")
    with log.open("a+b") if log is not None else tempfile.TemporaryFile() as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        start = out.tell()
        try:
            # No stdin: ansible-galaxy refuses a non-blocking one, and no step should ask anything.
            code = subprocess.run(argv, cwd=cwd, env=dict(env) if env is not None else None,
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  check=False).returncode
        except subprocess.TimeoutExpired as exc:
            raise ImageBuildError(f"{step}: {' '.join(argv)} did not finish within {timeout:.0f}s") from exc
        out.seek(start)
        text = out.read().decode(errors="replace")
    if code != 0:
        tail = "\n".join(text.strip().splitlines()[-OUTPUT_TAIL:])
        raise ImageBuildError(f"{step}: {' '.join(argv)} exited {code}:\n{tail}")
    return text


def digest(parts: Iterable[bytes | str]) -> str:
    """A short content key over `parts`, each length-prefixed so that no two lists collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:16]


def tree_digest(root: Path, *, skip: tuple[str, ...] = ("__pycache__",)) -> str:
    """A content key over every file below root (relative path and bytes), links followed; a path
    with a part matching a `skip` pattern (fnmatch) is left out."""
    parts: list[bytes | str] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and not any(fnmatch.fnmatch(name, pattern) for name in relative.parts for pattern in skip):
            parts += [relative.as_posix(), path.read_bytes()]
    return digest(parts)
