"""Reconcile benchmark: one shard of 3 cells x 2 pools x 3 replicas, created from nothing.

Times, in the same run and against the same cluster:
- ours: `ansible-playbook playbooks/reconcile.yml -e @shard.yaml` (one module run, one pass);
- the anchor: a playbook applying the very same rendered objects with `kubernetes.core.k8s`, one
  task per object (the usual way to drive Kubernetes from Ansible);
- a no-op pass once everything exists: the time spent inside the module's pass, the whole
  module process, and its write requests.
Goals: ours >= 20x faster than the anchor; no-op pass < 0.3 s of module time; zero writes.

Starts the test harness (real kube-apiserver + etcd) unless USE_EXISTING_CLUSTER=1 (then KUBECONFIG).

    .venv/bin/python -m bench.reconcile
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import client as kube
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from bench.context import print_context

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GOAL_RATIO, GOAL_NOOP_S = 20.0, 0.3
CELLS = ["zone-a", "zone-b", "zone-c"]


def shard_spec() -> dict:
    return {
        "clusterName": "bench",
        "globalTopoServer": {"address": "etcd-0.etcd:2379"},
        "cellTopologyLabels": {c: {"topology.kubernetes.io/zone": c} for c in CELLS},
        "pools": {
            "primary": {"cells": CELLS, "replicasPerCell": 3, "storage": {"size": "10Gi"}},
            "reporting": {"cells": CELLS, "replicasPerCell": 3, "storage": {"size": "5Gi"}},
        },
    }


def _env(kubeconfig: str, tree: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "KUBECONFIG": kubeconfig, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("ANSIBLE_INVENTORY", None)
    if tree:
        env.update(ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.tree", ANSIBLE_CALLBACK_TREE_DIR=str(tree))
    return env


def _playbook(playbook: Path, env: dict[str, str], *extra: str) -> float:
    started = time.perf_counter()
    out = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(playbook), *extra],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if out.returncode:
        raise SystemExit(f"{playbook.name} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return took


def _create_namespace(client: kube.KubeClient) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="bench")
    return name


def anchor_playbook(objects: list[dict], work: Path) -> Path:
    """kubernetes.core.k8s, one task per object (each read from its own file, so Go templates such as
    the pg_hba template's `{{.User}}` are not taken for Jinja), with the interpreter ours uses."""
    tasks = []
    for i, obj in enumerate(objects):
        path = work / f"object-{i:03d}.yaml"
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
        tasks.append({"name": f"apply {obj['kind']} {obj['metadata']['name']}",
                      "kubernetes.core.k8s": {"state": "present", "src": str(path)}})
    play = [{"name": "kubernetes.core anchor", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"ansible_python_interpreter": sys.executable}, "tasks": tasks}]
    playbook = work / "anchor.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    return playbook


def bench(kubeconfig: str) -> dict[str, float]:
    client = kube.connect(kubeconfig)
    ours_ns, anchor_ns = _create_namespace(client), _create_namespace(client)
    spec = shard_spec()
    objects = render.manifests(render.desired_state(model.load_spec(spec), anchor_ns))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        vars_file = work / "shard.yaml"
        vars_file.write_text(yaml.safe_dump({"multigres_shard": {
            "metadata": {"name": "bench", "namespace": ours_ns}, "spec": spec}}))
        tree = work / "tree"
        ours_s = _playbook(ROOT / "playbooks" / "reconcile.yml", _env(kubeconfig, tree), "-e", f"@{vars_file}")
        created = json.loads((tree / "localhost").read_text())
        anchor_s = _playbook(anchor_playbook(objects, work), _env(kubeconfig))
        noop_playbook_s = _playbook(ROOT / "playbooks" / "reconcile.yml", _env(kubeconfig, tree),
                                    "-e", f"@{vars_file}")
        noop = json.loads((tree / "localhost").read_text())
        # The same no-op pass in one process (what the operator pays per reconcile, imports aside).
        request = Request(namespace=ours_ns, definition={
            "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": "bench", "namespace": ours_ns}, "spec": spec})
        client.counts.clear()
        in_process = run_pass(client, request)
    return {
        "objects": len(objects), "created_writes": created["writes"], "ours_s": ours_s, "anchor_s": anchor_s,
        "noop_module_s": noop["seconds"], "noop_writes": noop["writes"], "noop_playbook_s": noop_playbook_s,
        "noop_in_process_s": in_process.seconds, "noop_in_process_writes": in_process.writes,
    }


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    if os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true", "yes"}:
        r = bench(os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config")))
    else:
        from multigres_pools.playground.cluster import Cluster

        with Cluster() as cluster:
            r = bench(str(cluster.kubeconfig))
    print_context()
    ratio = r["anchor_s"] / r["ours_s"]
    print(f"one shard, 3 cells x 2 pools x 3 replicas: {r['objects']} objects "
          f"({r['created_writes']} write requests in our pass)")
    print(f"  ours   ansible-playbook reconcile.yml (one module run):   {r['ours_s']:.2f} s")
    print(f"  anchor kubernetes.core.k8s, one task per object:          {r['anchor_s']:.2f} s")
    verdict = "met" if ratio >= GOAL_RATIO else "NOT met"
    print(f"  -> ours is {ratio:.1f}x faster (goal >= {GOAL_RATIO:.0f}x: {verdict})")
    print(f"  no-op pass: module time {r['noop_module_s'] * 1000:.0f} ms, {r['noop_writes']} writes "
          f"(goal < {GOAL_NOOP_S * 1000:.0f} ms and 0 writes: "
          f"{'met' if r['noop_module_s'] < GOAL_NOOP_S and r['noop_writes'] == 0 else 'NOT met'}); "
          f"whole playbook {r['noop_playbook_s']:.2f} s")
    print(f"  no-op pass in one process: {r['noop_in_process_s'] * 1000:.0f} ms, "
          f"{r['noop_in_process_writes']} writes; = {r['anchor_s'] / r['noop_in_process_s']:.0f}x below the anchor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
