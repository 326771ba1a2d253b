"""The real node's configuration files, as pure functions of its `Layout`: containerd (CRI on), the
CNI network, the kubelet, kube-proxy, CoreDNS and local-path-provisioner. Nothing here touches
the machine; node.py writes these files and starts the processes that read them."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NODE_NAME = "mgp-node"
CLUSTER_DOMAIN = "cluster.local"
CNI_NETWORK = "multigres-pools"
STORAGE_CLASS = "local-path"
PROVISIONER_NAME = "rancher.io/local-path"
PROVISIONER_NAMESPACE = "local-path-storage"


@dataclass(frozen=True)
class Ports:
    """Every port a node process listens on; each bound to the bridge address or to loopback."""

    kubelet: int
    kubelet_healthz: int
    scheduler: int
    proxy_healthz: int
    proxy_metrics: int
    dns_health: int
    dns_ready: int


@dataclass(frozen=True)
class Layout:
    """Where the node keeps its state and how its network is addressed."""

    state: Path              # ephemeral: sockets, configs, kubelet root, logs (removed at stop)
    containerd_root: Path    # kept between runs: imported images and their unpacked layers
    bridge: str              # the Linux bridge the CNI plugin attaches pods to
    subnet: ipaddress.IPv4Network
    ports: Ports
    kubeconfig: Path         # admin credentials every node process uses
    ca_cert: Path
    admin_cert: Path
    admin_key: Path
    pause_image: str
    helper_image: str

    @property
    def host_ip(self) -> str:
        """The bridge's address: the node IP, the pods' gateway, and the address of cluster DNS."""
        return str(self.subnet.network_address + 1)

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    @property
    def cni_conf_dir(self) -> Path:
        return self.state / "cni"

    @property
    def kubelet_root(self) -> Path:
        return self.state / "kubelet"

    @property
    def volumes(self) -> Path:
        """Where local-path-provisioner makes each PersistentVolume's directory."""
        return self.state / "volumes"


def containerd_toml(layout: Layout) -> str:
    """containerd 1.6 with its CRI plugin: runc with cgroupfs (there is no systemd), our CNI network,
    the locally built pause image, and no registry (every image is imported, never pulled)."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    state = layout.state / "containerd"
    return "\n".join([
        "version = 2",
        f'root = "{layout.containerd_root}"',
        f'state = "{state / "state"}"',
        "[grpc]",
        f'  address = "{layout.containerd_socket}"',
        "[ttrpc]",
        f'  address = "{state / "ttrpc.sock"}"',
        "[metrics]",
        '  address = ""',
        f"[{cri}]",
        f'  sandbox_image = "{layout.pause_image}"',
        "  enable_selinux = false",
        # This machine's root lacks CAP_SYS_RESOURCE: it cannot lower a score below its own, and runc
        # fails (`oom_score_adj: Permission denied`) unless containerd clamps the kubelet's -998.
        "  restrict_oom_score_adj = true",
        f"[{cri}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        "  discard_unpacked_layers = false",
        f"[{cri}.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        f"[{cri}.containerd.runtimes.runc.options]",
        "  SystemdCgroup = false",
        f'  Root = "{state / "runc"}"',  # runc's own state, with the node's (not /run/containerd/runc)
        f"[{cri}.cni]",
        '  bin_dir = "/usr/lib/cni"',
        f'  conf_dir = "{layout.cni_conf_dir}"',
        "  max_conf_num = 1",
        "",
    ])


def cni_conflist(layout: Layout) -> dict[str, Any]:
    """Debian's bridge + host-local + portmap plugins on the node's existing bridge. Hairpin mode lets
    a pod reach itself through its Service; no masquerade: nothing leaves this machine."""
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge", "bridge": layout.bridge, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(layout.state / "ipam"),
                    "ranges": [[{"subnet": str(layout.subnet), "gateway": layout.host_ip}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(layout: Layout) -> dict[str, Any]:
    """The kubelet as a one-node cluster needs it: cgroupfs on cgroup v1 (kept allowed in 1.34), the API
    server authenticated by the harness CA (logs, exec), eviction and image GC effectively off (a
    test machine's disk must not evict the shard or delete images that cannot be pulled again)."""
    ports = layout.ports
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": layout.host_ip,
        "port": ports.kubelet,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports.kubelet_healthz,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(layout.ca_cert)}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": "/multigres-pools",
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "clusterDNS": [layout.host_ip],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(layout.state / "resolv.conf"),
        "podLogsDir": str(layout.state / "pod-logs"),
        "enableControllerAttachDetach": False,
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
                         "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "maxPods": 60,
        "fileCheckFrequency": "5s",
        "nodeStatusUpdateFrequency": "4s",
        "syncFrequency": "10s",
        "shutdownGracePeriod": "0s",
        "registerNode": True,
        "localStorageCapacityIsolation": True,
        "protectKernelDefaults": False,
        "makeIPTablesUtilChains": False,
    }


def kube_proxy_config(layout: Layout) -> dict[str, Any]:
    """kube-proxy in iptables mode. Conntrack sysctls are left as the machine has them (0 = do not
    set); NodePorts only on the bridge address, never on loopback or the machine's own interfaces."""
    ports = layout.ports
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "bindAddress": layout.host_ip,
        "healthzBindAddress": f"127.0.0.1:{ports.proxy_healthz}",
        "metricsBindAddress": f"127.0.0.1:{ports.proxy_metrics}",
        "mode": "iptables",
        "clusterCIDR": str(layout.subnet),
        "nodePortAddresses": [f"{layout.host_ip}/32"],
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False, "syncPeriod": "10s", "minSyncPeriod": "0s"},
    }


def corefile(layout: Layout) -> str:
    """CoreDNS answering `cluster.local` from the API server on the bridge address: Services, headless
    Services' pod names (`hostname.subdomain.namespace.svc`), and reverse lookups for the pod network."""
    ports = layout.ports
    reverse = ".".join(reversed(str(layout.subnet.network_address).split(".")[:3])) + ".in-addr.arpa"
    return "\n".join([
        f"{CLUSTER_DOMAIN}:53 {reverse}:53 {{",
        f"    bind {layout.host_ip}",
        "    errors",
        f"    health 127.0.0.1:{ports.dns_health}",
        f"    ready 127.0.0.1:{ports.dns_ready}",
        f"    kubernetes {CLUSTER_DOMAIN} {reverse} {{",
        f"        kubeconfig {layout.kubeconfig} harness",
        "        pods verified",
        "        ttl 5",
        "    }",
        "    cache 5",
        "}",
        "",
    ])


def provisioner_config(layout: Layout) -> dict[str, Any]:
    """local-path-provisioner: every PersistentVolume is a directory under the node's volumes folder."""
    return {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(layout.volumes)]}]}


PROVISIONER_CONFIGMAP = "local-path-config"


def provisioner_configmap() -> dict[str, Any]:
    """The scripts the provisioner's helper pods run (they see the volume's path as $VOL_DIR): a
    world-writable directory, because a hostPath volume ignores the pod's fsGroup."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": PROVISIONER_CONFIGMAP, "namespace": PROVISIONER_NAMESPACE},
        "data": {"setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
                 "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'},
    }


def provisioner_helper_pod(layout: Layout) -> dict[str, Any]:
    """The template of the helper pods that make and remove volume directories (as root: the parent
    folder is root's)."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "helper-pod"},
        "spec": {"containers": [{
            "name": "helper-pod", "image": layout.helper_image, "imagePullPolicy": "Never",
            "securityContext": {"runAsUser": 0, "runAsGroup": 0}}]},
    }


def storage_class() -> dict[str, Any]:
    """The default StorageClass: bound when the pod is scheduled, so the volume is made on its node."""
    return {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS,
                     "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": PROVISIONER_NAME,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def to_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"  # JSON is YAML: one writer for both
