"""A MultigresShard reconciled by the operator on the real apiserver comes up on real Multigres v0.1.0
processes (process kubelet): one primary and two synchronous standbys as PostgreSQL and etcd see
them, a pod deleted by hand comes back on its own volume and rejoins, pods of the pre-release era
are refused with a clear reason. It runs on the package's stack after test_day2_on_multigres.py
(conftest.py), under its write load: these hold for the shard as day-2 operations left it."""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.dataplane.base import ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

from ..safety import Watched

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]


@pytest.fixture(scope="module")
def stack(watched: Watched) -> MultigresStack:
    """The package's stack, as test_day2_on_multigres.py left it (serving with 3 pods)."""
    watched.stack.wait_serving("play", replicas=3, timeout=300)
    return watched.stack


def _topology(stack: MultigresStack) -> ShardTopology:
    return ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))


def _app_name(pod: dict) -> str:
    """The name a pool pod's standby has in synchronous_standby_names: <cell>_<service id>."""
    args = next(c for c in pod["spec"]["containers"] if c["name"] == "multipooler")["args"]
    service_id = next(a.split("=", 1)[1] for a in args if a.startswith("--service-id="))
    return f"zone1_{service_id}"


def test_one_primary_two_synchronous_standbys_in_sql_etcd_and_labels(stack: MultigresStack) -> None:
    members = stack.members()
    (primary,) = [m for m in members if m.primary]
    standbys = {m.pod for m in members if not m.primary}
    assert len(standbys) == 2
    pods = {facts.name(p): p for p in stack.pods()}
    assert {name for name, state in primary.replicas if state in ("sync", "quorum")} == {
        _app_name(pods[name]) for name in standbys}
    assert all(_app_name(pods[name]) in primary.synchronous_standby_names for name in standbys)

    plane = V0_1(dial_host=stack.dial_host)
    try:
        poolers = plane.list_poolers(_topology(stack))
        roles = {p.hostname.split(".")[0]: p.role for p in poolers}
        assert roles == {primary.pod: keys.Role.PRIMARY, **dict.fromkeys(standbys, keys.Role.REPLICA)}
        leader = plane.leader(poolers)
        assert leader is not None and leader.hostname.split(".")[0] == primary.pod
    finally:
        plane.close()

    def labels_agree() -> bool:
        published = {facts.name(p): facts.labels(p).get(keys.LABEL_ROLE) for p in stack.pods()}
        return published == {primary.pod: keys.Role.PRIMARY, **dict.fromkeys(standbys, keys.Role.REPLICA)}

    wait_for(labels_agree, 60, "the agent's role labels to match the data plane")


def test_a_replica_deleted_by_hand_returns_on_its_volume_and_rejoins(stack: MultigresStack) -> None:
    primary = stack.primary()
    assert primary is not None
    victim = next(m for m in stack.members() if not m.primary)
    pod = next(p for p in stack.pods() if facts.name(p) == victim.pod)
    uid, claim = facts.uid(pod), next(
        v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v)
    pg_version = stack.kubelet.workdir / "pvc" / stack.namespace / claim / "pg_data" / "PG_VERSION"  # type: ignore[union-attr]
    born = os.stat(pg_version).st_mtime_ns
    with psycopg.connect(stack.dsn(primary.ip), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS handmade (note text)")
        conn.execute("INSERT INTO handmade VALUES ('before the deletion')")

    kube = stack.kube()
    try:
        kube.delete("v1", "Pod", stack.namespace, victim.pod)
    finally:
        kube.close()

    def replaced() -> bool:
        return any(facts.name(p) == victim.pod and facts.uid(p) != uid for p in stack.pods())

    wait_for(replaced, 180, f"{victim.pod} to be recreated")
    stack.wait_serving("play", replicas=3, timeout=300)
    assert os.stat(pg_version).st_mtime_ns == born, "the data directory was initialised again"
    back = next(m for m in stack.members() if m.pod == victim.pod)
    assert not back.primary
    with psycopg.connect(stack.dsn(back.ip), autocommit=True) as conn:
        assert conn.execute("SELECT note FROM handmade").fetchall() == [("before the deletion",)]


def test_era_a_pods_are_refused_with_a_clear_reason(stack: MultigresStack) -> None:
    name = "era-a-pooler"
    kube = stack.kube()
    try:
        kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": stack.namespace},
                    "spec": {"containers": [{"name": "multipooler", "image": "ghcr.io/multigres/multigres:sha-d782aa0",
                                             "command": ["/multigres/bin/multipooler"]}]}},
                   "test", force=True)

        def waiting() -> dict | None:
            pod = kube.get("v1", "Pod", stack.namespace, name) or {}
            statuses = (pod.get("status") or {}).get("containerStatuses") or []
            return next((s["state"]["waiting"] for s in statuses if "waiting" in s.get("state", {})
                         and s["state"]["waiting"].get("message")), None)

        state = wait_for(waiting, 60, "the era-A container to be refused")
        assert state["reason"] == "ErrImagePull"
        assert "sha-d782aa0" in state["message"] and "v0.1.0" in state["message"]
        time.sleep(2)
        pod = kube.get("v1", "Pod", stack.namespace, name)
        assert pod is not None and pod["status"].get("phase") == "Pending"
        events = [e for e in kube.list("v1", "Event", stack.namespace, "")
                  if e["involvedObject"].get("name") == name]
        assert any("sha-d782aa0" in e.get("message", "") for e in events)
    finally:
        kube.delete("v1", "Pod", stack.namespace, name)
        kube.close()



def test_status_screen_shows_the_confirmed_primary_and_its_synchronous_set(stack: MultigresStack) -> None:
    import json
    import subprocess
    import sys

    def status(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "multigres_pools.cli", "status", "play", "-n", stack.namespace,
                               "--kubeconfig", str(stack.kubeconfig), *extra],
                              capture_output=True, text=True, timeout=120)

    primary = stack.primary()
    assert primary is not None
    as_json = status("-o", "json", "--dial-pod-ips")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["replication"]["primary"] == primary.pod and report["multigres_version"] == "v0.1.0"
    assert len(report["replication"]["synchronous"]) == 2
    rows = {row["name"]: row for row in report["pods"]}
    assert set(rows) == {facts.name(p) for p in stack.pods()}
    assert rows[primary.pod]["sync"] == "primary"
    assert all(row["sync"] == "sync" for name, row in rows.items() if name != primary.pod)
    assert {row["role"] for row in rows.values()} == {"PRIMARY", "REPLICA"}
    # Every pooler's own position, from the one round of Status calls that confirms the primary.
    assert all(row["lsn"] for row in rows.values()), rows
    assert all(row["lag_bytes"] >= 0 for name, row in rows.items() if name != primary.pod)
    assert report["replication"]["durability"]["required"] == 2
    assert report["replication"]["durability"]["multi_cell"] is False

    # Without --dial-pod-ips: the registered cluster DNS names do not resolve on this host, so each is
    # dialled at its pod's IP, as from a laptop.
    screen = status()
    assert screen.returncode == 0 and "(confirmed by consensus)" in screen.stdout, screen.stdout
    assert "Traceback" not in screen.stdout + screen.stderr
    missing = subprocess.run([sys.executable, "-m", "multigres_pools.cli", "status", "nope", "-n", stack.namespace,
                              "--kubeconfig", str(stack.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and f"no MultigresShard {stack.namespace}/nope" in missing.stderr
