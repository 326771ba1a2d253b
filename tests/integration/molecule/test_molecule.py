"""`molecule test` (scenario `default`) against the session's harness cluster: converge, idempotence
(a second converge changes nothing) and verify (pods, PVCs, PDBs, Services, labels, status)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.cluster
def test_molecule_default_scenario(kube, namespace, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ,
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "MGP_KUBECONFIG": str(kube.kubeconfig),
           "MGP_NAMESPACE": namespace,
           "MOLECULE_GLOB": "molecule/*/molecule.yml",
           "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "ANSIBLE_FORCE_COLOR": "0",
           # Molecule keeps its state under the ephemeral dir; one per test run.
           "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path / "molecule")}
    proc = subprocess.run([str(Path(bindir) / "molecule"), "test", "-s", "default"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0, out[-6000:]
    # Each step ran and succeeded; idempotence means the second converge reported no change.
    for step in ("create", "prepare", "converge", "idempotence", "verify", "destroy"):
        assert re.search(rf"\b{step}\W+Executed: Successful", out), f"{step} did not succeed:\n{out[-3000:]}"
