"""The real node's configuration files: every listener on loopback or the bridge address, pods on
the node's own bridge and subnet, and the settings this machine needs (realnode/config.py)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from multigres_pools.playground.realnode import config

LAYOUT = config.Layout(
    state=Path("/run/x/state"), containerd_root=Path("/cache/containerd"), bridge="mgk12345-br",
    subnet=ipaddress.IPv4Network("10.201.7.0/24"), ports=config.Ports(*range(30001, 30008)),
    kubeconfig=Path("/k/kubeconfig"), ca_cert=Path("/k/ca.crt"), admin_cert=Path("/k/a.crt"),
    admin_key=Path("/k/a.key"), pause_image="localhost/p:1", helper_image="localhost/h:1")
ALLOWED = {"127.0.0.1", LAYOUT.host_ip}


def _addresses(text: str) -> set[str]:
    return set(re.findall(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", text))


def test_every_listener_is_on_loopback_or_the_bridge_address() -> None:
    kubelet = config.kubelet_config(LAYOUT)
    proxy = config.kube_proxy_config(LAYOUT)
    listeners = {kubelet["address"], kubelet["healthzBindAddress"],
                 proxy["bindAddress"], proxy["healthzBindAddress"].split(":")[0],
                 proxy["metricsBindAddress"].split(":")[0], *(a.split("/")[0] for a in proxy["nodePortAddresses"])}
    corefile = config.corefile(LAYOUT)
    listeners |= _addresses(" ".join(line for line in corefile.splitlines()
                                     if line.strip().startswith(("bind", "health", "ready"))))
    assert listeners <= ALLOWED, listeners - ALLOWED
    assert f"bind {LAYOUT.host_ip}" in corefile  # without `bind`, CoreDNS listens on every interface


def test_pods_join_the_nodes_bridge_and_subnet_and_resolve_through_its_dns() -> None:
    (bridge, portmap) = config.cni_conflist(LAYOUT)["plugins"]
    assert bridge["bridge"] == LAYOUT.bridge and portmap["type"] == "portmap"
    (rng,) = bridge["ipam"]["ranges"][0]
    assert rng == {"subnet": "10.201.7.0/24", "gateway": "10.201.7.1"}
    assert config.kubelet_config(LAYOUT)["clusterDNS"] == ["10.201.7.1"]
    assert config.kube_proxy_config(LAYOUT)["clusterCIDR"] == "10.201.7.0/24"
    assert "7.201.10.in-addr.arpa" in config.corefile(LAYOUT)  # reverse lookups of pod addresses


def test_what_this_machine_needs_is_set() -> None:
    toml = config.containerd_toml(LAYOUT)
    assert "restrict_oom_score_adj = true" in toml  # root without CAP_SYS_RESOURCE
    assert "SystemdCgroup = false" in toml and 'sandbox_image = "localhost/p:1"' in toml
    kubelet = config.kubelet_config(LAYOUT)
    assert kubelet["cgroupDriver"] == "cgroupfs" and kubelet["failCgroupV1"] is False
    assert kubelet["imageGCHighThresholdPercent"] == 100  # images cannot be pulled again here
    assert str(LAYOUT.state) in kubelet["podLogsDir"]  # nothing under /var/log/pods


def test_the_provisioners_helper_pod_runs_the_local_helper_image_as_root() -> None:
    pod = config.provisioner_helper_pod(LAYOUT)
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "localhost/h:1" and container["imagePullPolicy"] == "Never"
    assert container["securityContext"]["runAsUser"] == 0
    assert set(config.provisioner_configmap()["data"]) == {"setup", "teardown"}
