"""Build, once per machine, the real `ansible-operator` binary of the operator-sdk Ansible Operator
(ansible-operator-plugins) from the Go module proxy, to run our collection under it in tests.

The pinned module and its dependencies are in playground/ansible_operator_bin/go.mod and go.sum
(a `tool` directive keeps the requirement). The proxy serves the pinned version but refuses to
list versions of this module (403), and the checksum database it relays has no entry for it (404),
so the checksum database is off for this one module (GONOSUMDB): go.sum here pins its hash. The
binary is cached under ~/.cache/multigres-pools/ like the kube binaries (playground/binaries.py),
keyed by the version and the build inputs, built under the same lock. Never a prebuilt download.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from multigres_pools.playground.binaries import build_once, cache_root, source_key

MODULE = "github.com/operator-framework/ansible-operator-plugins"
VERSION = "v1.42.0"
PACKAGE = f"{MODULE}/cmd/ansible-operator"
SOURCE_DIR = Path(__file__).resolve().parent / "ansible_operator_bin"


def cache_dir() -> Path:
    return cache_root() / f"ansible-operator-{VERSION}-{source_key(SOURCE_DIR)}"


def binary() -> Path:
    return cache_dir() / "ansible-operator"


def module_dir() -> Path:
    """The module's source in the Go module cache (its images/ansible-operator holds the base
    image's Pipfile.lock and its ansible_runner_http event plugin); downloads it if needed."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"], cwd=SOURCE_DIR,
                         env=_go_env(), check=True, capture_output=True, text=True, timeout=600)
    return Path(json.loads(out.stdout)["Dir"])


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    nosumdb = ",".join(filter(None, [env.get("GONOSUMDB"), MODULE]))
    return {**env, "GONOSUMDB": nosumdb, "GOFLAGS": " ".join(filter(None, [env.get("GOFLAGS"), "-mod=mod"]))}


def _build(target: Path) -> None:
    if shutil.which("go") is None:
        raise SystemExit("ansible_operator: 'go' is not on PATH; install Go to build ansible-operator")
    print(f"ansible_operator: building {PACKAGE}@{VERSION} into {target} "
          "(first build on a fresh machine: about 5 CPU-minutes, 3-4 minutes on 2 idle cores)", flush=True)
    started = time.monotonic()
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(["go", "build", "-trimpath", f"-ldflags=-s -w -X {MODULE}/internal/version.Version={VERSION}",
                    "-o", str(tmp / "ansible-operator"), PACKAGE], cwd=SOURCE_DIR, env=_go_env(), check=True)
    target.mkdir(parents=True, exist_ok=True)
    (tmp / "ansible-operator").replace(target / "ansible-operator")
    tmp.rmdir()
    print(f"ansible_operator: built in {time.monotonic() - started:.0f}s", flush=True)


def resolve() -> Path:
    """The path of the cached binary, built first if missing."""
    build_once(lambda: not os.access(binary(), os.X_OK), lambda: _build(cache_dir()))
    return binary()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ensure", action="store_true", help="build the binary if missing (default: only print)")
    args = parser.parse_args()
    print(resolve() if args.ensure else binary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
