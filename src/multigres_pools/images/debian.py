"""The slim Debian bases every image starts from, made here with mmdebstrap (no registry is needed):
the equivalent of `debian:<suite>-slim`. A Containerfile names its base as `ARG BASE=debian:…-slim`,
and `make images` passes the local one instead.

Reproducibility: the same suite, mirror and options give the same package set for a given state of
the Debian archive; SOURCE_DATE_EPOCH fixes the timestamps mmdebstrap writes. A base is cached by
a key over exactly those inputs, so it is made once per machine; each image records the package
versions it got (`make images` prints where).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from multigres_pools.images.steps import digest, run

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Debian's slim images leave these out; copyright files stay (the licences travel with the image).
EXCLUDED_PATHS = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/info/*", "/usr/share/locale/*",
                  "/usr/share/lintian/*", "/usr/share/groff/*")
KEPT_PATHS = ("/usr/share/doc/*/copyright",)
SOURCE_DATE_EPOCH = 1767225600  # 2026-01-01T00:00:00Z: fixed, so timestamps do not vary per build
# The freshness checks a machine's apt may switch off for its mirror (a mirror served from a
# stored copy carries expired Release files); signatures are verified either way.
APT_FRESHNESS_OPTIONS = ("Acquire::Check-Valid-Until", "Acquire::Check-Date")


def apt_options() -> tuple[str, ...]:
    """`-o Name=false` for each freshness check this machine's apt has switched off, so that
    mmdebstrap and the Containerfiles' apt-get follow the same policy as the host."""
    try:
        dump = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ()
    off = {line.split(" ", 1)[0] for line in dump.splitlines() if line.endswith('"false";')}
    return tuple(f"-o{name}=false" for name in APT_FRESHNESS_OPTIONS if name in off)


@dataclass(frozen=True)
class DebianBase:
    suite: str  # bookworm, trixie

    @property
    def upstream(self) -> str:
        """The registry image this base stands in for."""
        return f"docker.io/library/debian:{self.suite}-slim"

    def argv(self, target: Path) -> list[str]:
        options = [f"--dpkgopt=path-exclude={p}" for p in EXCLUDED_PATHS]
        options += [f"--dpkgopt=path-include={p}" for p in KEPT_PATHS]
        options += [f"--aptopt={o.removeprefix('-o')}" for o in apt_options()]
        return ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar", *options,
                # What the image's own apt needs later; the lists are fetched again by each build.
                "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*",
                self.suite, str(target), f"deb [signed-by={KEYRING}] {MIRROR} {self.suite} main"]

    def key(self) -> str:
        return digest(["debian-base", *self.argv(Path("TARGET")), str(SOURCE_DATE_EPOCH)])

    def make(self, target: Path, log: Path) -> None:
        """Write the root filesystem as a tar archive at target."""
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}
        run(self.argv(target), f"mmdebstrap {self.suite}", env=env, log=log, timeout=1800)
