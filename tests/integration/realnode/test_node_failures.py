"""A real node that cannot start says which component, quotes its log and tears down what started;
only one real node runs per machine; a machine without what a node needs is told what is missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from multigres_pools.playground import podnet
from multigres_pools.playground.cluster import Cluster
from multigres_pools.playground.containerd import kill_shims
from multigres_pools.playground.realnode import config, preflight
from multigres_pools.playground.realnode.node import NodeNet, NodeStartError, RealNode, claim

pytestmark = [pytest.mark.realnode, pytest.mark.cluster]


@pytest.fixture
def net() -> Iterator[NodeNet]:
    claimed = claim()
    try:
        yield claimed
    finally:
        claimed.release()


def test_a_second_node_on_the_machine_is_refused_naming_the_holder(net: NodeNet) -> None:
    with pytest.raises(NodeStartError, match=r"claim failed: a real node already runs on this machine \(pid \d+"):
        claim()
    assert net.bridge.name in podnet.link_names()  # the first one is untouched


def test_a_component_that_cannot_start_is_named_with_its_log_and_everything_is_torn_down(
        net: NodeNet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(layout: config.Layout) -> dict[str, Any]:
        return {**kubelet_config(layout), "maxPods": "many"}  # a typo a user could make: fatal at start

    kubelet_config = config.kubelet_config
    monkeypatch.setattr(config, "kubelet_config", broken)
    cluster = Cluster(tmp_path / "cluster", node=net.cluster_network()).start()
    node = RealNode(net, cluster, progress=lambda line: None)
    try:
        with pytest.raises(NodeStartError) as failed:
            node.start()
        message = str(failed.value)
        assert failed.value.component == "kubelet"
        assert "maxPods" in message and "what to do:" in message, message
        assert not node.processes, "everything the node started was stopped"
        assert not kill_shims(str(node.layout.containerd_socket))
    finally:
        node.stop()
        cluster.stop()
    net.release()
    assert net.bridge.name not in podnet.link_names()
    assert not net.state.exists()


def test_preflight_names_each_missing_piece(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert preflight.problems() == []  # this machine has everything (make setup installed it)
    monkeypatch.setenv("PATH", str(tmp_path))  # no command at all
    monkeypatch.setattr(preflight, "CNI_DIR", tmp_path / "cni")
    found = "\n".join(preflight.problems())
    for command, package in preflight.COMMANDS.items():
        assert f"`{command}` is missing: apt-get install {package}" in found
    assert f"CNI plugin {tmp_path / 'cni' / 'bridge'} is missing" in found
    assert preflight.choose("auto")[0] == "process" and "cannot start here" in preflight.choose("auto")[1]
    assert preflight.choose("real") == ("real", "--node real")
