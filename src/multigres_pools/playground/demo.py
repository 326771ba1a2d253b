"""`make demo`: the whole life of a shard on this machine, with nothing but this checkout.

It starts a real control plane (the playground cluster), the operator and the agent as processes,
and simulated nodes (kubelet, one multipooler test peer per pod, multiorch's replication set-up;
see localstack.py); applies examples/sample-shard.yaml; scales one cell 3 -> 5, rolls a new image,
scales down 5 -> 2; deletes the shard. A live table shows pods, roles, drain states and conditions while
it runs (redrawn in place on a terminal, one block per change otherwise). At the end it prints what
happened and how long each phase took, and cleans everything up.

    python -m multigres_pools.playground.demo               # the full story
    python -m multigres_pools.playground.demo --render-only # just render the sample shard and summarise it
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from .localstack import REPO_ROOT, LocalStack, PodTimeline, is_ready, pod_index, wait_for

SAMPLE = REPO_ROOT / "examples" / "sample-shard.yaml"
RECONCILE_PLAYBOOK = REPO_ROOT / "playbooks" / "reconcile.yml"
Done = Callable[[Manifest | None, list[Manifest]], bool]  # (shard, pods) -> the phase is over


# --- the sample shard, adapted to this machine -------------------------------------------------------
def load_sample(path: Path = SAMPLE) -> Manifest:
    docs: list[Manifest] = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == keys.SHARD_KIND]
    if not docs:
        raise SystemExit(f"{path}: no {keys.SHARD_KIND} document")
    return docs[0]


def demo_shard(sample: Manifest, namespace: str, topo_address: str, topo_root: str, replicas: int) -> Manifest:
    """The sample with one pool in one cell (so the table stays readable), pointed at our topology."""
    doc = copy.deepcopy(sample)
    doc["metadata"] = {"name": sample["metadata"]["name"], "namespace": namespace}
    doc.pop("status", None)
    spec = doc["spec"]
    pool_name = sorted(spec["pools"])[0]
    pool = spec["pools"][pool_name]
    pool["cells"] = pool["cells"][:1]
    pool["replicasPerCell"] = replicas
    spec["pools"] = {pool_name: pool}
    spec["globalTopoServer"] = {**spec.get("globalTopoServer", {}), "address": topo_address, "rootPath": topo_root}
    # The local stack's poolers are era-A doubles, so the shard says so (the agent picks its adapter by it).
    spec["multigres"] = {"version": keys.MultigresVersion.ERA_A.value}
    if "multiorch" in spec and spec["multiorch"].get("cells"):
        spec["multiorch"]["cells"] = pool["cells"]
    return doc


def with_replicas(doc: Manifest, replicas: int) -> Manifest:
    out = copy.deepcopy(doc)
    pool = next(iter(out["spec"]["pools"].values()))
    pool["replicasPerCell"] = replicas
    return out


def with_postgres_image(doc: Manifest, image: str) -> Manifest:
    out = copy.deepcopy(doc)
    out["spec"].setdefault("images", {})["postgres"] = image
    return out


def postgres_image(doc: Manifest) -> str:
    """The postgres image the shard runs now (the spec's, or the model's default)."""
    from ansible_collections.multigres.pools.plugins.module_utils.spec import model

    return model.load_spec(doc["spec"]).container_images().postgres


def next_image(current: str) -> str:
    """The same image with its tag bumped (`…:17.6` -> `…:17.6-demo2`), for the rolling update."""
    base, _, tag = current.rpartition(":") if ":" in current.rsplit("/", 1)[-1] else (current, "", "latest")
    return f"{base}:{tag}-demo2" if base else f"{current}:demo2"


# --- reading the state ------------------------------------------------------------------------------
def condition(shard: Manifest | None, ctype: str) -> Manifest:
    conditions: list[Manifest] = ((shard or {}).get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == ctype:
            return cond
    return {}


def converged(shard: Manifest | None, pods: list[Manifest], replicas: int, image: str | None) -> bool:
    """Status caught up with the spec, Ready, and the pods are exactly what was asked for."""
    if shard is None:
        return False
    meta, status = shard.get("metadata") or {}, shard.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        return False
    if condition(shard, "Ready").get("status") != "True":
        return False
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if len(live) != replicas or len(pods) != replicas:
        return False
    roles = Counter((p["metadata"].get("labels") or {}).get(keys.LABEL_ROLE) for p in live)
    if roles.get(keys.Role.PRIMARY.value) != 1:
        return False
    for pod in live:
        if not is_ready(pod) or (pod["metadata"].get("annotations") or {}).get(keys.ANN_DRAIN_STATE):
            return False
        if image and image not in _images(pod):
            return False
    return True


def _images(pod: Manifest) -> list[str]:
    spec = pod.get("spec") or {}
    return [c.get("image", "") for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]]


def _short(name: str) -> str:
    return re.sub(r"-[0-9a-f]{8}-(\d+)$", r"-…-\1", name)


# --- the live table ----------------------------------------------------------------------------------
def table(phase: str, elapsed: float, shard: Manifest | None, pods: list[Manifest], standbys: tuple[str, ...],
          primary: str | None, postgres_image: str | None) -> list[str]:
    status = (shard or {}).get("status") or {}
    conds = " ".join(f"{c['type']}={c.get('status')}" for c in status.get("conditions") or [])
    width = max([len(_short(p["metadata"]["name"])) for p in pods] + [3])
    lines = [f"▶ {phase}  ({elapsed:5.1f}s)",
             f"  shard: phase={status.get('phase', '-')} readyReplicas={status.get('readyReplicas', '-')}  {conds}",
             f"  {'POD':<{width}} {'IDX':>3} {'READY':<5} {'ROLE':<8} {'DRAIN':<19} {'SYNC':<8} IMAGE"]
    for pod in pods:
        meta = pod["metadata"]
        name = meta["name"]
        drain = (meta.get("annotations") or {}).get(keys.ANN_DRAIN_STATE, "")
        if meta.get("deletionTimestamp"):
            drain = (drain + " (deleting)").strip()
        sync = "primary" if name == primary else ("standby" if name in standbys else "-")
        pg = next((i for i in _images(pod) if postgres_image and i.split(":")[0] == postgres_image.split(":")[0]),
                  _images(pod)[0] if _images(pod) else "")
        lines.append(f"  {_short(name):<{width}} {pod_index(pod):>3} {'yes' if is_ready(pod) else 'no':<5} "
                     f"{(meta.get('labels') or {}).get(keys.LABEL_ROLE, '-'):<8} {drain or '-':<19} {sync:<8} "
                     f"{pg.rsplit('/', 1)[-1]}")
    return lines


class Display:
    """Redraws in place on a terminal; otherwise prints a frame only when its content changed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._height = 0
        self._last: list[str] = []

    def show(self, lines: list[str]) -> None:
        if self.tty:
            width = shutil.get_terminal_size().columns
            out = "".join(f"\x1b[2K{line[:width]}\n" for line in lines)
            clear = "".join("\x1b[2K\n" for _ in range(max(0, self._height - len(lines))))
            up = f"\x1b[{self._height}F" if self._height else ""
            self.stream.write(up + out + clear + (f"\x1b[{len(clear)}F" if clear else ""))
            self._height = len(lines)
        else:
            body = lines[1:]  # the first line carries the clock, which changes every frame
            if body == self._last:
                return
            self._last = body
            self.stream.write("\n".join(lines) + "\n\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        if self.tty:
            self._height = 0  # keep the last frame, write below it
        self.stream.write(text + "\n")
        self.stream.flush()


# --- the story ----------------------------------------------------------------------------------------
@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    created: int = 0
    deleted: int = 0
    drains: int = 0
    reconciles: int = 0
    ok: bool = True
    detail: str = ""


@dataclass
class Story:
    stack: LocalStack
    doc: Manifest
    display: Display
    timeline: PodTimeline
    timeout: float = 240.0
    phases: list[Phase] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.doc["metadata"]["name"])

    def step(self, title: str, doc: Manifest, replicas: int, image: str | None) -> Phase:
        """Apply `doc` and wait until the shard converged on it."""
        self.doc = doc
        return self._phase(title, lambda: self.stack.apply_shard(doc),
                           lambda shard, pods: converged(shard, pods, replicas, image), image)

    def delete(self) -> Phase:
        """Delete the shard and wait until its finalizer let it go."""
        kube = self.stack.kube()
        ns = self.stack.namespace
        return self._phase("delete the shard",
                           lambda: kube.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, self.name),
                           lambda shard, _pods: shard is None, None)

    def _phase(self, title: str, act: Callable[[], object], done: Done, image: str | None) -> Phase:
        phase = Phase(title)
        self.phases.append(phase)
        start, runs0 = time.monotonic(), self.stack.reconciles()
        uids0 = set(self.timeline.uids())
        act()
        while True:
            shard, pods = self.stack.get_shard(self.name), self.stack.pods()
            nodes = self.stack.nodes
            standbys = nodes.sync_standbys() if nodes else ()
            primary = nodes.primary() if nodes else None
            self.display.show(table(title, time.monotonic() - start, shard, pods, standbys, primary, image))
            if done(shard, pods):
                break
            if time.monotonic() - start > self.timeout:
                phase.ok, phase.detail = False, f"not done after {self.timeout:.0f}s"
                break
            time.sleep(0.25)
        phase.seconds = time.monotonic() - start
        seen = set(self.timeline.uids())
        gone = {u for u in seen if (self.timeline.deleted_at(u) or 0) >= start}
        phase.created = len(seen - uids0)
        phase.deleted = len(gone)
        phase.drains = sum(1 for u in gone
                           if keys.DrainState.READY_FOR_DELETION.value in self.timeline.drain_states(u))
        phase.reconciles = self.stack.reconciles() - runs0
        return phase

    def run(self, image: str) -> bool:
        # The image rolls at 5 replicas: with 2, the only synchronous standby cannot be drained
        # (Multigres refuses to empty the list), so a rolling update there waits for a human.
        plan = [
            ("create the shard: 3 replicas", 3, None),
            ("scale up: 3 -> 5", 5, None),
            (f"rolling update: postgres -> {image.rsplit('/', 1)[-1]}", 5, image),
            ("scale down: 5 -> 2 (drains)", 2, image),
        ]
        for title, replicas, new_image in plan:
            doc = with_replicas(self.doc, replicas)
            if new_image is not None:
                doc = with_postgres_image(doc, new_image)
            if not self.step(title, doc, replicas, new_image).ok:
                return False
        return True


def summary(phases: list[Phase], total: float) -> list[str]:
    width = max(len(p.name) for p in phases)
    lines = ["", "What happened:",
             f"  {'PHASE':<{width}} {'TIME':>7} {'PODS+':>5} {'PODS-':>5} {'DRAINS':>6} {'RUNS':>5}  RESULT"]
    for p in phases:
        lines.append(f"  {p.name:<{width}} {p.seconds:6.1f}s {p.created:>5} {p.deleted:>5} {p.drains:>6} "
                     f"{p.reconciles:>5}  {'ok' if p.ok else 'FAILED: ' + p.detail}")
    lines.append(f"  {'total':<{width}} {total:6.1f}s")
    lines.append("  PODS+/PODS-: pods created/deleted; DRAINS: pods deleted after a completed drain; "
                 "RUNS: operator passes")
    return lines


# --- render-only mode ---------------------------------------------------------------------------------
def rendered(doc: Manifest) -> tuple[Any, list[Manifest]]:
    """(Desired, every object) for a MultigresShard document, by the reconcile's own renderer."""
    from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
    from ansible_collections.multigres.pools.plugins.module_utils.spec import model

    shard = model.load_shard(doc)
    desired = render.desired_state(shard.spec, shard.metadata.namespace or "default")
    return desired, render.manifests(desired)


def render_summary(sample: Manifest) -> list[str]:
    desired, objects = rendered(sample)
    shard_name = sample["metadata"]["name"]
    kinds = Counter(o["kind"] for o in objects)
    lines = [f"Sample shard {shard_name}: {len(objects)} objects",
             f"  {'KIND':<24} {'COUNT':>5}"]
    lines += [f"  {kind:<24} {n:>5}" for kind, n in sorted(kinds.items())]
    lines.append(f"  {'POOL/CELL':<24} {'PODS':>5}  SPEC-HASH")
    lines += [f"  {p.pool + '/' + p.cell:<24} {p.replicas:>5}  {p.spec_hash}" for p in desired.pools]
    return lines


def missing_pieces() -> list[str]:
    missing = []
    if not SAMPLE.is_file():
        missing.append(str(SAMPLE.relative_to(REPO_ROOT)))
    if not RECONCILE_PLAYBOOK.is_file():
        missing.append(str(RECONCILE_PLAYBOOK.relative_to(REPO_ROOT)))
    return missing


# --- main ---------------------------------------------------------------------------------------------
def run_demo(args: argparse.Namespace, out: TextIO) -> int:
    from multigres_pools.playground.cluster import Cluster

    display = Display(out)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="mgp-demo-"))
    phases = [Phase("start the control plane, operator and agent")]
    cluster = Cluster(workdir / "cluster")
    stack: LocalStack | None = None
    timeline: PodTimeline | None = None
    ok = False
    try:
        display.note("Starting kube-apiserver, kube-controller-manager, two etcds, the operator and the agent …")
        cluster.start()
        topo = cluster.topo_etcd
        stack = LocalStack(cluster.kubeconfig, topo.endpoint, args.namespace, workdir / "stack")
        stack.start()
        timeline = PodTimeline(cluster.kubeconfig, args.namespace)
        timeline.start()
        wait_for(stack.operator_ready, 120, "the operator to become ready")
        phases[0].seconds = time.monotonic() - started
        doc = demo_shard(load_sample(), args.namespace, f"{topo.host}:{topo.port}", stack.topo_root, 3)
        story = Story(stack, doc, display, timeline, timeout=args.phase_timeout, phases=phases)
        ok = story.run(next_image(postgres_image(doc))) and story.delete().ok
        if not ok and stack.operator is not None:
            display.note("\nThe demo did not converge. Operator log tail:\n" + stack.operator.tail())
    finally:
        cleanup = Phase("clean up: stop everything, remove files")
        t0 = time.monotonic()
        if timeline is not None:
            timeline.stop()
        if stack is not None:
            stack.stop()
        cluster.stop()
        keep = not ok and args.keep_logs
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
        cleanup.seconds = time.monotonic() - t0
        phases.append(cleanup)
        for line in summary(phases, time.monotonic() - started):
            display.note(line)
        if keep:
            display.note(f"Logs kept in {workdir}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m multigres_pools.playground.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--render-only", action="store_true", help="render the sample shard and print a summary")
    p.add_argument("--namespace", default="demo")
    p.add_argument("--phase-timeout", type=float, default=240.0, help="seconds each phase may take")
    p.add_argument("--keep-logs", action="store_true", help="keep operator/agent logs when the demo fails")
    args = p.parse_args(argv)
    missing = missing_pieces()
    if args.render_only or missing:
        if missing:
            print(f"(full demo unavailable, missing: {', '.join(missing)}; rendering only)\n")
        if not SAMPLE.is_file():
            return 1
        print("\n".join(render_summary(load_sample())))
        return 0
    return run_demo(args, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
