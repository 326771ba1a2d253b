"""Every flag the renderer passes to a v0.1.0 process is one the real v0.1.0 binary accepts, with a
value it parses: each rendered container's command and args (downward-API references expanded as
the kubelet would) are run with `--help` appended, as the toolchain's unprivileged user. Cobra parses
every flag before it prints help, so an unknown flag or a malformed value fails the run."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from multigres_pools.playground import toolchain as toolchain_module
from multigres_pools.playground.toolchain import Toolchain
from tests import render_corpus as corpus

pytestmark = pytest.mark.multigres

FULL = {
    "pools": {"default": {"cells": ["zone1", "zone2"]}},
    "postgresConfigRef": {"name": "pg-template"},
    "postgresConfig": {"work_mem": "8MB"},
    "initdbArgs": "--data-checksums",
    "logLevels": {"pgctld": "debug", "multipooler": "warn", "multiorch": "error", "multigateway": "debug"},
    "multiorch": {"poolerHealthCheckInterval": "500ms", "recoveryCycleInterval": "1.5s",
                  "failoverGracePeriod": "20s", "failoverGracePeriodMaxJitter": "2s"},
    "multigateway": {"enabled": True},
}
DOWNWARD = {"POD_NAME": "pod-0", "POD_IP": "10.0.0.7"}


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return toolchain_module.ensure(progress=lambda line: print(line, flush=True))


def _containers() -> list[dict]:
    desired = render.desired_state(model.load_spec(corpus.spec(FULL)), "db")
    specs = [desired.pools[0].pod(0)["spec"]]
    specs += [o["spec"]["template"]["spec"] for o in desired.objects if o["kind"] == "Deployment"]
    return [c for spec in specs for c in [*spec.get("initContainers", []), *spec["containers"]]
            if c["name"] not in ("postgres-exporter",  # not Multigres binaries
                                 keys.REPOSITORY_CHECK_CONTAINER)]


def _expand(arg: str) -> str:
    return re.sub(r"\$\((\w+)\)", lambda m: DOWNWARD[m.group(1)], arg)


def test_every_rendered_flag_parses_in_the_real_binaries(toolchain: Toolchain) -> None:
    containers = _containers()
    assert sorted(c["name"] for c in containers) == ["multigateway", "multigateway", "multiorch", "multiorch",
                                                     "multipooler", "postgres"]
    for container in containers:
        command = container["command"]
        # The pgctld sidecar is `sh -c SCRIPT /usr/local/bin/pgctld`: the script execs that binary
        # with the args (after `pgctld start`, checked below).
        execs = command[3] if command[:2] == ["/bin/sh", "-c"] else command[0]
        binary = toolchain.multigres_bin / Path(execs).name
        argv = [str(binary), *(_expand(a) for a in container["args"]), "--help"]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                             **toolchain.process_kwargs())  # type: ignore[call-overload]
        assert run.returncode == 0, f"{container['name']}: {run.stderr or run.stdout}"
        assert "unknown flag" not in run.stderr and "invalid argument" not in run.stderr, run.stderr


def test_the_sidecars_early_start_flags_parse_in_pgctld(toolchain: Toolchain) -> None:
    """`pgctld start` in the sidecar's script (render/pool_v0_1.py) takes the server's flags for
    finding and running PostgreSQL."""
    sidecar = next(c for c in _containers() if c["name"] == "postgres")
    start = [w for w in shlex.split(sidecar["command"][2].split(" & ")[0].split("then ", 1)[1])
             if not w.startswith("PGPASSFILE=")]
    # "$0": the binary the command names after the script, the one the script then execs as the server.
    assert start[:2] == ["$0", "start"] and Path(sidecar["command"][3]).name == "pgctld", start
    assert set(start[2:]) <= set(sidecar["args"]), (start, sidecar["args"])  # the server's own values
    run = subprocess.run([str(toolchain.multigres_bin / "pgctld"), *start[1:], "--help"], capture_output=True,
                         text=True, timeout=60, **toolchain.process_kwargs())  # type: ignore[call-overload]
    assert run.returncode == 0, run.stderr or run.stdout
    assert "unknown flag" not in run.stderr and "invalid argument" not in run.stderr, run.stderr


def test_a_wrong_flag_would_be_caught(toolchain: Toolchain) -> None:
    """The check above is not vacuous: the same invocation with one bad flag or value fails."""
    pooler = next(c for c in _containers() if c["name"] == "multipooler")
    binary = str(toolchain.multigres_bin / "multipooler")
    for bad in ("--no-such-flag=1", "--pg-port=five"):
        run = subprocess.run([binary, *(_expand(a) for a in pooler["args"]), bad, "--help"],
                             capture_output=True, text=True, timeout=60,
                             **toolchain.process_kwargs())  # type: ignore[call-overload]
        assert run.returncode != 0 and bad.split("=")[0] in run.stderr, run.stderr
