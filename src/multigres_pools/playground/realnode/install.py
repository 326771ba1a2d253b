"""Installing multigres.pools on the real node exactly as docs/install.md tells users: write the
bundle with `multigres-pools install-bundle`, apply it with `kubectl apply --server-side -k`, and
wait until the operator's and the agent's Deployments are Available (their probes pass)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from ... import cli
from .. import node_binaries


class KubectlError(RuntimeError):
    pass


@functools.cache
def _binary() -> Path:
    """Found (or built) once per process: resolving hashes every node Go build directory, and the
    tests call kubectl hundreds of times."""
    return node_binaries.resolve()["kubectl"]


def kubectl(kubeconfig: Path, *args: str, check: bool = True, timeout: float = 300) -> str:
    """Our kubectl (the cluster's own version) with the harness's admin kubeconfig; its output."""
    argv = [str(_binary()), f"--kubeconfig={kubeconfig}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise KubectlError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout + (done.stderr if not check else "")


# The agent's log level on the real node, for measuring (its `shard pass` lines are DEBUG: docs/agent.md).
AGENT_LOG_LEVEL_ENV = "MULTIGRES_POOLS_REALNODE_AGENT_LOG_LEVEL"
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def agent_log_level() -> str | None:
    """The level AGENT_LOG_LEVEL_ENV asks for, if set; a value the agent would refuse stops the start."""
    level = os.environ.get(AGENT_LOG_LEVEL_ENV, "").strip()
    if level and level.upper() not in _LOG_LEVELS:
        raise ValueError(f"{AGENT_LOG_LEVEL_ENV}={level!r}: expected one of {', '.join(_LOG_LEVELS)}")
    return level.upper() or None


def _set_agent_log_level(folder: Path, level: str) -> None:
    """The bundle's agent Deployment with `--log-level`, before it is applied (one rollout)."""
    path = folder / "agent-deployment.yaml"
    deployment = yaml.safe_load(path.read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [a for a in container["args"] if not a.startswith("--log-level")] + [f"--log-level={level}"]
    path.write_text(yaml.safe_dump(deployment, sort_keys=False))


def install_bundle(kubeconfig: Path, folder: Path, namespaces: tuple[str, ...], timeout: float = 180) -> None:
    watch = [arg for ns in namespaces for arg in ("--watch-namespace", ns)]
    level = agent_log_level()
    if cli.main(["install-bundle", "-o", str(folder), *watch]) != 0:
        raise KubectlError(f"multigres-pools install-bundle -o {folder} failed")
    if level is not None:
        _set_agent_log_level(folder, level)
    kubectl(kubeconfig, "apply", "--server-side", "-k", str(folder))
    for name in (keys.OPERATOR_COMPONENT, keys.AGENT_COMPONENT):
        kubectl(kubeconfig, "-n", keys.INSTALL_NAMESPACE, "rollout", "status", f"deployment/{name}",
                f"--timeout={int(timeout)}s", timeout=timeout + 30)


def restricted_namespace(kubeconfig: Path, name: str) -> None:
    """A namespace whose Pod Security admission enforces the restricted profile, as a cautious cluster
    admin labels the namespaces databases run in."""
    kubectl(kubeconfig, "create", "namespace", name, check=False)
    kubectl(kubeconfig, "label", "--overwrite", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
