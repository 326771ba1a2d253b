"""The collection as a user installs it: built with `ansible-galaxy collection build`, installed
with `ansible-galaxy collection install`, and driven by FQCN playbooks against the real apiserver
from a virtualenv with only ansible-core, then from one with ansible-core and the runtime
requirements the collection ships (meta/requirements.txt). Nothing of this checkout is on those
Pythons' paths or in Ansible's configuration. The wheel's CLI runs from the second Python with
only the wheel added. The virtualenvs are built once per machine (tests/helpers/collection.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers.collection import BIN, REPO, build_collection, build_wheel, cached_venv, pin
from tests.integration.reconcile.rig import spec

pytestmark = pytest.mark.cluster
MISSING = "Failed to import the required Python library (pydantic)"


@dataclass
class Installed:
    root: Path
    python: Path
    collections: Path
    without_requirements: dict  # the results of the playbook run before meta/requirements.txt

    def playbook(self, play: list, kubeconfig: Path | None = None, **env: str) -> tuple[int, dict, str]:
        """Run one playbook with this venv's ansible-playbook from a folder without ansible.cfg;
        returns its exit code, the JSON its last task wrote and the output."""
        work = self.root / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        (work / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
        clean = {"PATH": f"{self.python.parent}:/usr/bin:/bin", "HOME": str(self.root / "home"),
                 "ANSIBLE_HOME": str(self.root / "home" / ".ansible"),
                 "ANSIBLE_COLLECTIONS_PATH": str(self.collections), "LANG": "C.UTF-8", **env}
        if kubeconfig:
            clean["KUBECONFIG"] = str(kubeconfig)
        out = subprocess.run([str(self.python.parent / "ansible-playbook"), "play.yml"], cwd=work, env=clean,
                             capture_output=True, text=True, timeout=300)
        results = work / "results.json"
        return out.returncode, json.loads(results.read_text()) if results.exists() else {}, out.stdout + out.stderr


def _play(shard: dict, *tasks: dict) -> list:
    """One local play over `shard` whose modules run with ansible-playbook's own Python; its last
    task saves the registered `rendered` and `reconciled` as results.json."""
    save = {"name": "Save the results", "ansible.builtin.copy": {
        "content": "{{ {'render': rendered, 'reconcile': reconciled} | to_json }}", "dest": "results.json",
        "mode": "0644"}}
    return [{"name": "Installed multigres.pools", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "shard": shard},
             "tasks": [*tasks, save]}]


def _shard(namespace: str) -> dict:
    return {"metadata": {"name": "demo", "namespace": namespace}, "spec": spec(2)}


RENDER = {"name": "Render", "register": "rendered", "ignore_errors": True,
          "multigres.pools.shard_render": {"shards": ["{{ shard }}"], "output_dir": "{{ playbook_dir }}/../out"}}
RECONCILE = {"name": "Reconcile", "multigres.pools.shard_reconcile": {"shard": "{{ shard }}"},
             "register": "reconciled", "ignore_errors": True}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("installed")
    tarball = build_collection(root / "dist")
    collections = root / "collections"
    ansible_core = pin(REPO / "requirements.txt", "ansible-core")
    bare = cached_venv(ansible_core) / "bin" / "python"
    # --no-deps: Galaxy is not reachable here, and neither module needs kubernetes.core. Not from
    # this checkout's folder: its ansible.cfg would show ansible-galaxy the checkout as installed.
    subprocess.run([str(bare.parent / "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
                    str(collections), str(tarball)], check=True, capture_output=True, timeout=120, cwd=root,
                   env={"PATH": f"{bare.parent}:/usr/bin:/bin", "HOME": str(root / "home")})
    installed = collections / "ansible_collections" / "multigres" / "pools"
    shipped = installed / "meta" / "requirements.txt"
    assert shipped.read_text() == (REPO / "meta" / "requirements.txt").read_text()
    # Before the runtime requirements (ansible-core alone): both tasks fail and their results are kept.
    code, without, output = Installed(root, bare, collections, {}).playbook(
        _play(_shard("not-contacted"), RENDER, RECONCILE))
    assert code == 0, output
    python = cached_venv(ansible_core, "-r", str(REPO / "meta" / "requirements.txt")) / "bin" / "python"
    for venv in (bare, python):
        assert subprocess.run([str(venv), "-c", "import multigres_pools"], cwd=root,
                              capture_output=True).returncode != 0, f"{venv} sees this checkout"
    return Installed(root, python, collections, without)


def test_without_requirements_each_module_names_the_library_and_the_pip_command(installed):  # type: ignore[no-untyped-def]
    for task in ("render", "reconcile"):
        result = installed.without_requirements[task]
        assert result["failed"], result
        assert MISSING in result["msg"] and "pip install pydantic" in result["msg"], result["msg"]
        assert "meta/requirements.txt" in result["msg"]


def test_fqcn_playbook_renders_and_reconciles_a_shard(installed, kube, namespace):  # type: ignore[no-untyped-def]
    play = _play(_shard(namespace), {**RENDER, "ignore_errors": False}, {**RECONCILE, "ignore_errors": False})
    # The module in its own process first (what any connection but local gets), then the action plugin in process.
    code, first, output = installed.playbook(play, kube.kubeconfig, MULTIGRES_POOLS_IN_PROCESS="0")
    assert code == 0, output
    assert first["render"]["changed"] and any(p.endswith(".yaml") for p in first["render"]["changed_files"])
    assert first["reconcile"]["changed"] and first["reconcile"]["writes"] > 0
    from kubernetes import client

    pods = client.CoreV1Api(kube.api_client()).list_namespaced_pod(namespace).items
    assert len(pods) == 2, [p.metadata.name for p in pods]
    code, second, output = installed.playbook(play, kube.kubeconfig)
    assert code == 0, output
    assert not second["render"]["changed"] and not second["reconcile"].get("failed")
    assert len(client.CoreV1Api(kube.api_client()).list_namespaced_pod(namespace).items) == 2


def test_the_wheel_cli_renders_outside_this_checkout(installed, tmp_path):  # type: ignore[no-untyped-def]
    site = tmp_path / "site"
    wheel = build_wheel(tmp_path / "wheel")
    subprocess.run([str(BIN / "pip"), "install", "-q", "--disable-pip-version-check", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, timeout=300)
    (tmp_path / "shard.yaml").write_text(yaml.safe_dump({"apiVersion": "pools.multigres.com/v1alpha1",
                                                         "kind": "MultigresShard", **_shard("db")}))
    env = {"PATH": f"{installed.python.parent}:/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    out = subprocess.run([str(installed.python), str(site / "bin" / "multigres-pools"), "render", "-f", "shard.yaml",
                          "-o", "out"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "out" / "kustomization.yaml").is_file()
    # The collection came with the wheel, not from this checkout.
    where = subprocess.run([str(installed.python), "-c",
                            "from multigres_pools import paths; print(paths.collection_root())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str((site / "ansible_collections" / "multigres" / "pools").resolve()), where.stderr
