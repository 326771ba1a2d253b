"""PodsStuck on the real apiserver: a MultigresShard whose pgctld image does not exist gets pool pods
that the process kubelet leaves waiting with ErrImagePull (as a kubelet would), the reconcile names pod,
container and reason on the shard (and warns once), and once the image is fixed the pod is replaced and
the condition clears.

The pods run on a process kubelet of their own (a node label the shard's cell selects), whose image
table maps the fixed images to stand-in executables that answer the probes; no Multigres is needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.helpers.fake_agent import FakeAgent
from tests.integration.process_kubelet.conftest import run_as_user, script_image
from tests.integration.reconcile.rig import CELL, POOL, Rig, spec

pytestmark = pytest.mark.cluster

MISSING = "registry.invalid/multigres/pgctld:v0.0.0-missing"
NODE_LABEL = "pools.multigres.com/test-node"
SID = naming.ShardId("demo", "postgres", "default", "0-inf")

# Stands in for pgctld, multipooler and postgres_exporter: serves 200 on --http-port (the probes) until SIGTERM.
STANDIN = '''
import http.server, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
port = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--http-port=")), None)
if port is None:
    while True:
        time.sleep(3600)
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *_):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", port), Ok).serve_forever()
'''


@pytest.fixture
def standin_image() -> Iterator[Path]:
    with script_image("mgp-standin-image-", dict.fromkeys(("pgctld", "multipooler", "postgres_exporter"),
                                                          STANDIN)) as image:
        yield image


@pytest.fixture
def own_kubelet(kube, namespace: str, standin_image: Path) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    from multigres_pools.playground.process_kubelet import ImageSpec, ProcessKubelet

    release = model.RELEASE_IMAGES[keys.MultigresVersion.V0_1_0]
    # /bin for the shell the bootstrap guard's repository-check init container runs (a new shard: it
    # finds the mode `initdb` and exits 0 without pgbackrest).
    # pgctld also where the real image has it: the sidecar's script runs it by that path.
    standin = ImageSpec(path_dirs=[str(standin_image), "/bin"],
                        files={layout.PGCTLD_BIN: str(standin_image / "pgctld")})
    images = dict.fromkeys((release.multigres, release.pgctld, model.DEFAULT_EXPORTER_IMAGE), standin)
    kubelet = ProcessKubelet(kube.api_client(), images, run_as_user(), namespace=namespace,
                             node_labels={NODE_LABEL: namespace}, backoff=(1.0, 4.0))
    kubelet.start()
    try:
        yield kubelet
    finally:
        kubelet.stop()


def _body(namespace: str, **images: str) -> dict[str, Any]:
    # The cell selects this test's node only, so no other kubelet of the package binds the pod.
    return {**spec(2), "cellTopologyLabels": {CELL: {NODE_LABEL: namespace}},
            **({"images": images} if images else {})}


def _stuck(rig: Rig) -> dict[str, Any]:
    cr = rig.cr() or {}
    return next((c for c in (cr.get("status") or {}).get("conditions") or []
                 if c["type"] == keys.ShardCondition.PODS_STUCK), {})


def _pass_until(rig: Rig, done: Any, timeout: float, what: str) -> dict[str, Any]:
    """Reconcile passes with the agent's turns between them (no operator runs here) until `done(condition)`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rig.run(name="demo")
        cond = _stuck(rig)
        if done(cond):
            return cond
        rig.agent.step()
        rig.agent.publish_roles()
        time.sleep(0.5)
    status = (rig.cr() or {}).get("status") or {}
    raise AssertionError(f"{what} not reached within {timeout}s; status: {status}; last plan: {rig.results[-1].plan}")


def test_a_missing_image_is_named_on_the_shard_and_clears_once_fixed(  # type: ignore[no-untyped-def]
        kube, namespace, kube_client, own_kubelet):
    rig = Rig(kube_client, namespace, FakeAgent(kube.api_client(), namespace), own_kubelet)
    pods = [naming.pod_name(SID, POOL, CELL, i) for i in range(2)]  # the fewest a v0.1.0 shard has
    pod = pods[0]
    rig.create_cr(_body(namespace, postgres=MISSING))

    stuck = _pass_until(rig, lambda c: c.get("status") == "True", 90, "PodsStuck=True")
    print(f"PodsStuck: {stuck['reason']}: {stuck['message']}")
    live = rig.pods()[pod]
    first = live["status"]["initContainerStatuses"][0]
    # The first container of the pod to use the missing pgctld image: the bootstrap guard's check.
    assert first["name"] == keys.REPOSITORY_CHECK_CONTAINER
    waiting = first["state"]["waiting"]
    assert MISSING in waiting["message"]  # the kubelet's words, repeated on the shard:
    assert stuck["reason"] == "ErrImagePull"
    assert stuck["message"] == "; ".join(f"{name}: init container {keys.REPOSITORY_CHECK_CONTAINER} waiting: "
                                         f"ErrImagePull ({waiting['message']})" for name in pods)
    assert (rig.cr() or {})["status"]["phase"] == "Degraded"
    events = [e for e in kube_client.list("v1", "Event", namespace, "")
              if e["involvedObject"].get("kind") == keys.SHARD_KIND and e.get("reason") == "PodsStuck"]
    assert len(events) == 1 and events[0]["type"] == "Warning" and pod in events[0]["message"]
    # The status screen lists it under "Needs attention".
    screen = subprocess.run([sys.executable, "-m", "multigres_pools.cli", "status", "demo", "-n", namespace,
                             "--kubeconfig", str(kube.kubeconfig), "-o", "json"],
                            capture_output=True, text=True, timeout=120)
    assert screen.returncode == 0, screen.stderr
    assert f"PodsStuck: {stuck['message']}" in json.loads(screen.stdout)["attention"]

    before = {name: facts.uid(rig.pods()[name]) for name in pods}
    rig.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, "demo",
                           {"spec": {"images": {"postgres": None}}}, field_manager="test")  # back to the default
    # A rolling update waits for the pool to settle (every pod Ready), which a pod that never started does
    # not: as the runbook says, delete it; the engine drains it (external deletion) and recreates it.
    rig.run(name="demo")
    assert "waits for pools to settle" in " ".join(rig.results[-1].plan)
    for name in pods:
        rig.client.delete("v1", "Pod", namespace, name)

    def replaced_and_started(cond: dict[str, Any]) -> bool:
        def started(name: str) -> bool:
            live = rig.pods().get(name) or {}
            sidecar = next((c for c in (live.get("status") or {}).get("initContainerStatuses") or []
                            if c["name"] == "postgres"), {})  # pgctld, after the repository check
            return facts.uid(live) not in (None, before[name]) and bool(sidecar.get("started"))
        return all(started(name) for name in pods) and bool(cond)

    cleared = _pass_until(rig, replaced_and_started, 180, "the pod replaced and its pgctld started")
    assert cleared["status"] == "False" and cleared["reason"] == "NoPodStuck" and cleared["message"] == ""
    after = rig.pods()[pod]
    assert after["spec"]["initContainers"][0]["image"] == model.RELEASE_IMAGES[keys.MultigresVersion.V0_1_0].pgctld
    assert all("waiting" not in (s.get("state") or {}) for s in after["status"].get("initContainerStatuses") or [])
    reasons = {e.get("reason") for e in kube_client.list("v1", "Event", namespace, "")
               if e["involvedObject"].get("kind") == keys.SHARD_KIND}
    assert "PodsUnstuck" in reasons
