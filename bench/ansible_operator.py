"""The operator-sdk Ansible Operator against our own operator, step by step, in one run (issue #28:
every step within 2x of our operator's time for the same step).

Both run the same reconcile playbook against a real API server started for the run, each on a
shard of its own in a namespace of its own, one after the other (never sharing the CPU): create
with 3 replicas, scale to 4, a drain-safe scale-down to 3, a spec the policy refuses, the refusal
fixed, a pool pod deleted by hand, the shard deleted (tests/helpers/operator_steps.py; a thread
plays kubelet, volume binder and agent). Each step is timed from the change to its outcome; the
anchor is our operator's time for the same step in the same run.

    python -m bench.ansible_operator [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import ENV_ALLOWED_IMAGES, SpecPolicy

from bench.context import print_context
from multigres_pools.playground.cluster import Cluster
from multigres_pools.playground.localstack import ensure_namespace, install_crd
from tests.helpers.operator_steps import ALLOWED_IMAGES, Steps, world
from tests.integration.ansible_operator.rig import AnsibleOperator, install, operator_python
from tests.integration.operator.rig import LiveOperator

GOAL = 2.0  # the Ansible Operator's time over ours, per step


@contextmanager
def ours(kubeconfig: Path, namespace: str, root: Path) -> Iterator[None]:
    op = LiveOperator(kubeconfig, namespace, root, policy=SpecPolicy.of(images=[ALLOWED_IMAGES]))
    try:
        yield
    finally:
        op.stop()


@contextmanager
def ansible_operator(kubeconfig: Path, namespace: str, root: Path) -> Iterator[None]:
    python = operator_python()
    op = AnsibleOperator(python, install(root, python), kubeconfig, namespace)
    op.env[ENV_ALLOWED_IMAGES] = ALLOWED_IMAGES
    op.start()
    try:
        yield
    finally:
        op.stop()


def life(cluster: Cluster, namespace: str, start: Callable[[Path, str, Path], AbstractContextManager[None]],
         root: Path) -> dict[str, float]:
    kube = connect(str(cluster.kubeconfig))
    try:
        ensure_namespace(kube, namespace)
        root.mkdir(parents=True)
        with start(cluster.kubeconfig, namespace, root), world(cluster.api_client(), namespace):
            steps = Steps(kube, namespace)
            steps.create(3)
            steps.scale(4)
            steps.scale(3)
            steps.refuse()
            steps.fix_refusal(3)
            steps.delete_pod(3)
            steps.delete_shard()
            return steps.seconds
    finally:
        kube.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="lives per operator, alternating (default 2)")
    args = parser.parse_args()
    print_context()
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "ansible-operator": []}
    with tempfile.TemporaryDirectory(prefix="bench-aop-") as tmp, Cluster(Path(tmp) / "cluster") as cluster:
        install_crd(connect(str(cluster.kubeconfig)))
        for n in range(args.rounds):
            for name, start in (("ours", ours), ("ansible-operator", ansible_operator)):
                seconds = life(cluster, f"{name.replace('-', '')}{n}", start, Path(tmp) / f"{name}{n}")
                runs[name].append(seconds)
                print(f"round {n + 1}, {name}: " + ", ".join(f"{k} {v:.2f}s" for k, v in seconds.items()), flush=True)
    print(f"\n{'step':<24} {'ours (anchor)':>14} {'ansible-operator':>17} {'ratio':>7}  goal <= {GOAL:g}x")
    worst = 0.0
    for step in runs["ours"][0]:
        a = statistics.median(r[step] for r in runs["ours"])
        b = statistics.median(r[step] for r in runs["ansible-operator"])
        ratio = b / a
        worst = max(worst, ratio)
        print(f"{step:<24} {a:13.2f}s {b:16.2f}s {ratio:6.2f}x  {'met' if ratio <= GOAL else 'MISSED'}")
    print(f"worst step: {worst:.2f}x ({'every step within' if worst <= GOAL else 'not every step within'} {GOAL:g}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
