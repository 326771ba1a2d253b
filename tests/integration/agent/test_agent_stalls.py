"""A dead topology etcd becomes visible: the agent publishes its verdict on the MultigresShard, the shard's
TopologyUnreachable condition (status/stalls.py, what status.compute reports) turns True with the reason, a
blocked drain turns DrainStalled on the pod and on the shard, and everything clears once the etcd is
back. The etcd is this test's own, killed with SIGKILL and restarted on the same ports and data."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import connect
from ansible_collections.multigres.pools.plugins.module_utils.status import stalls
from kubernetes import client

from multigres_pools.agent.context import AgentConfig
from multigres_pools.playground import binaries
from multigres_pools.playground.cluster import Etcd
from multigres_pools.playground.localstack import install_crd
from tests.integration.agent.rig import ShardRig


def _poll(what: str, check: Callable[[], object], step: Callable[[], None], deadline_s: float = 60) -> object:
    """Run `step` (an agent pass) until `check` holds; generous deadline, no timing assertion."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        step()
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _etcd(workdir: Path, port: int | None = None, peer_port: int | None = None) -> Etcd:
    ports = {k: v for k, v in (("port", port), ("peer_port", peer_port)) if v is not None}
    etcd = Etcd(binaries.resolve()["etcd"], workdir / "data", workdir / "etcd.log", **ports)
    etcd.start()
    etcd.wait_ready()
    return etcd


@pytest.fixture
def own_etcd(tmp_path: Path) -> Iterator[list[Etcd]]:
    """This test's topology etcd (a list: the test replaces it by its restart); stopped at the end."""
    started: list[Etcd] = [_etcd(tmp_path)]
    yield started
    for etcd in started:
        etcd.stop()


def _create_owned_shard(rig: ShardRig, kubeconfig: Path) -> dict:
    install_crd(connect(str(kubeconfig)))
    custom = client.CustomObjectsApi(rig.api)
    body = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": naming.shard_resource_name(rig.sid), "namespace": rig.namespace},
            "spec": {"clusterName": rig.sid.cluster,
                     "globalTopoServer": {"address": rig.etcd_endpoint.removeprefix("http://"), "rootPath": rig.root},
                     "pools": {"default": {"cells": ["zone1"]}}}}
    cr = custom.create_namespaced_custom_object(keys.API_GROUP, keys.API_VERSION, rig.namespace,
                                                keys.SHARD_PLURAL, body)
    for name in rig.names:  # what the renderer does: pool pods are owned by their MultigresShard
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"ownerReferences": [{
            "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": cr["metadata"]["name"],
            "uid": cr["metadata"]["uid"]}]}})
    return cr


def _shard(rig: ShardRig, cr: dict) -> dict:
    return client.CustomObjectsApi(rig.api).get_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL, cr["metadata"]["name"])


def _verdict(rig: ShardRig, cr: dict) -> dict:
    raw = (_shard(rig, cr)["metadata"].get("annotations") or {}).get(keys.ANN_TOPOLOGY_HEALTH)
    return json.loads(raw) if raw else {}


def _pods(rig: ShardRig) -> list[dict]:
    return [p for name in rig.names if (p := rig.pod(name)) is not None]


def test_a_killed_topology_etcd_is_reported_on_the_shard_and_clears_when_it_is_back(
        kube, namespace, kubelet, own_etcd, tmp_path) -> None:
    etcd = own_etcd[0]
    rig = ShardRig(kube.api_client(), namespace, etcd.endpoint, kube.client(), replicas=3,
                   config=AgentConfig(register_topology=False, topology_stall_after_s=0.5, stall_after_s=0.5))
    try:
        rig.start()
        kubelet.mark_all_ready(namespace)
        cr = _create_owned_shard(rig, kube.kubeconfig)
        agent = rig.agent()
        shard_name = cr["metadata"]["name"]
        metric = agent.ctx.metrics.topology_reachable.labels(namespace, shard_name)
        rig.run(agent)
        assert metric._value.get() == 1 and _verdict(rig, cr) == {}
        assert stalls.topology_condition(_shard(rig, cr))["status"] == "False"

        etcd.process.kill()  # SIGKILL: no goodbye to its clients
        etcd.process.wait(10)
        rig.request_drain(rig.names[1])
        down = _poll("the unreachable verdict", lambda: _verdict(rig, cr).get("reachable") is False,
                     lambda: rig.run(agent))
        assert down
        cond = stalls.topology_condition(_shard(rig, cr))
        assert cond["status"] == "True" and cond["reason"] == "TopologyUnavailable", cond
        assert etcd.endpoint.removeprefix("http://") in cond["message"] and "since" in cond["message"]
        assert metric._value.get() == 0 and rig.events(keys.ShardCondition.TOPOLOGY_UNREACHABLE)
        # The drain cannot move without the topology: DrainStalled on the pod, and on the shard.
        _poll("DrainStalled on the pod", lambda: stalls.drain_condition(_pods(rig))["status"] == "True",
              lambda: rig.run(agent))
        drains = stalls.drain_condition(_pods(rig))
        assert drains["reason"] == "topology-unavailable" and keys.ANN_DRAIN_FORCE in drains["message"]

        restarted = _etcd(tmp_path, etcd.port, etcd.peer_port)  # same ports, same data: the records are back
        own_etcd.append(restarted)
        _poll("the reachable verdict", lambda: _verdict(rig, cr).get("reachable") is True, lambda: rig.run(agent))
        cond = stalls.topology_condition(_shard(rig, cr))
        assert cond["status"] == "False" and cond["reason"] == "Reachable" and metric._value.get() == 1
        assert rig.events("TopologyReachable")
        # The drain goes on, and the DrainStalled it left behind clears.
        _poll("the drain to advance", lambda: stalls.drain_condition(_pods(rig))["status"] == "False",
              lambda: rig.run(agent))
        assert rig.state(rig.names[1]) != keys.DrainState.REQUESTED
    finally:
        with contextlib.suppress(Exception):  # the records are gone with the etcd if it is down
            rig.stop()
