"""`ansible-playbook playbooks/reconcile.yml -e @shard.yaml` against the harness via KUBECONFIG."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.reconcile.rig import spec

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[3]


def _playbook(kube, vars_file: Path, *extra: str) -> tuple[int, dict, str]:  # type: ignore[no-untyped-def]
    """Run the playbook; return its exit code, the reconcile task's result (the tree callback's
    per-host JSON) and the output."""
    tree = vars_file.parent / "tree"
    env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig), "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree", "ANSIBLE_CALLBACK_TREE_DIR": str(tree),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("ANSIBLE_INVENTORY", None)
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                          "playbooks/reconcile.yml", "-e", f"@{vars_file}", *extra], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    result = json.loads((tree / "localhost").read_text())
    (tree / "localhost").unlink()
    return out.returncode, result, out.stdout + out.stderr


def test_playbook_reconciles_then_reports_no_change(rig, kube, tmp_path):  # type: ignore[no-untyped-def]
    vars_file = tmp_path / "shard.yaml"
    vars_file.write_text(yaml.safe_dump({"multigres_shard": {
        "metadata": {"name": "demo", "namespace": rig.namespace}, "spec": spec(2)}}))

    code, preview, output = _playbook(kube, vars_file, "--check", "--diff")
    assert code == 0, output
    assert preview["changed"] and rig.pods() == {}
    assert any(line.startswith("apply Pod ") for line in preview["plan"])

    code, created, output = _playbook(kube, vars_file)
    assert code == 0, output
    assert created["changed"] and len(rig.pods()) == 2

    rig.world()
    rig.settle(spec(2))
    code, quiet, output = _playbook(kube, vars_file)
    assert code == 0, output
    assert not quiet["changed"] and quiet["writes"] == 0


def test_playbook_fails_with_the_field_path_and_writes_nothing(rig, kube, tmp_path):  # type: ignore[no-untyped-def]
    vars_file = tmp_path / "shard.yaml"
    bad = spec(2)
    bad["pools"]["main"]["replicasPerCell"] = 0
    vars_file.write_text(yaml.safe_dump({"multigres_shard": {
        "metadata": {"name": "demo", "namespace": rig.namespace}, "spec": bad}}))
    code, failed, output = _playbook(kube, vars_file)
    assert code != 0, output
    assert any(e.startswith("spec.pools.main.replicasPerCell") for e in failed["errors"]), failed["errors"]
    assert rig.pods() == {} and rig.pvcs() == {}
