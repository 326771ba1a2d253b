"""Claims as filesystems of their own (claimfs), the ground of the disk-full and slow-disk faults: a
kubelet started with sized_claims mounts an ext4 filesystem of the claim's requested size, on a loop
device of its own, at its directory before the pod starts; the containers write into it and run out
of space there, a blkio throttle on its device slows the pod's writes (slowdisk), stop() unmounts it
and deletes its image, and sweep() does so for what a kubelet whose owner died left mounted."""

from __future__ import annotations

import ipaddress
import os
import tempfile
import time
from pathlib import Path

import pytest
from kubernetes import client

from multigres_pools.playground import claimfs, faults, podnet, slowdisk
from multigres_pools.playground import process_kubelet as kubelet_module

from .conftest import make_kubelet, toy, toy_pod
from .test_process_kubelet import delete_and_wait, eventually, exec_ok, running

pytestmark = pytest.mark.cluster
MIB = 1 << 20


def _claim(core: client.CoreV1Api, namespace: str, name: str, size: str) -> None:
    core.create_namespaced_persistent_volume_claim(namespace, {"metadata": {"name": name}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}})


def _pod(kubelet: kubelet_module.ProcessKubelet) -> dict:
    """Pod "p" with the claim "data" at /var/lib/pooler, on `kubelet`'s node."""
    return toy_pod("p", toy("c", "run", volumeMounts=[{"name": "data", "mountPath": "/var/lib/pooler"}]),
                   volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
                   nodeName=kubelet.node_name)


def _start(core: client.CoreV1Api, namespace: str, pod: dict) -> None:
    core.create_namespaced_pod(namespace, pod)
    running(core, namespace, "p")


def test_a_sized_claim_fills_up_inside_the_pod_and_goes_with_the_kubelet(kube, namespace, toy_image) -> None:
    core = client.CoreV1Api(kube.api_client())
    _claim(core, namespace, "data", "32Mi")
    kubelet = make_kubelet(kube, toy_image, namespace=namespace, sized_claims=True).start()
    try:
        _start(core, namespace, _pod(kubelet))
        path = kubelet.pvc_path(namespace, "data")
        assert os.path.ismount(path)
        fs = os.statvfs(path)
        assert 24 * MIB < fs.f_blocks * fs.f_frsize <= 32 * MIB  # ext4 keeps some for its journal and tables
        assert os.major(os.stat(path).st_dev) == 7  # a loop device of its own
        _, uid, _ = exec_ok(kubelet, namespace, "p", "c", "stat", "/var/lib/pooler").split()
        assert int(uid) == kubelet.uid  # the pod's user owns its filesystem's root
        exec_ok(kubelet, namespace, "p", "c", "write", "/var/lib/pooler/kept", "before")
        assert (path / "kept").read_text() == "before"  # the pod writes into the claim's filesystem

        with faults.disk_full_at(path) as taken:
            assert 20 * MIB < taken <= 32 * MIB
            full = kubelet.exec(namespace, "p", "c", ["toy", "write", "/var/lib/pooler/more", "x" * 8192])
            assert full.returncode != 0 and "No space left on device" in full.stderr
        assert not (path / faults.FILLER).exists()  # healed
        exec_ok(kubelet, namespace, "p", "c", "write", "/var/lib/pooler/more", "x" * 8192)
    finally:
        kubelet.stop()
    assert not claimfs.mounts(f"{claimfs.SOURCE_PREFIX}{kubelet.instance}")
    assert not list(claimfs.IMAGES.glob(f"{claimfs.SOURCE_PREFIX}{kubelet.instance}-*"))  # the image went too


def _dsync_writes(path: Path, count: int) -> float:
    """Seconds for `count` 8 KiB writes, each on the disk before the next (O_DSYNC, as a WAL flush)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DSYNC, 0o600)
    try:
        started = time.monotonic()
        for _ in range(count):
            os.write(fd, b"x" * 8192)
        return time.monotonic() - started
    finally:
        os.close(fd)


def test_a_slow_disk_throttles_the_pods_writes_to_its_volume_and_lets_go(kube, namespace, toy_image) -> None:
    core = client.CoreV1Api(kube.api_client())
    _claim(core, namespace, "data", "32Mi")
    kubelet = make_kubelet(kube, toy_image, namespace=namespace, sized_claims=True).start()
    try:
        _start(core, namespace, _pod(kubelet))
        path, bridge = kubelet.pvc_path(namespace, "data"), kubelet.bridge
        assert bridge is not None
        index = int(ipaddress.IPv4Address(kubelet.pod_ip(namespace, "p"))) - int(bridge.subnet.network_address)
        netns = f"{bridge.instance}-p{index}"
        pids = {str(pid) for pid in podnet.netns_pids(netns)}
        with slowdisk.throttled(netns, claimfs.device(path), 20) as what:
            (group,) = slowdisk.groups(os.getpid())
            assert pids <= set((group / "cgroup.procs").read_text().split()) and f"{len(pids)} processes at 20" in what
            # A process of the group (as a PostgreSQL backend forked by a moved postmaster would be):
            # 40 synchronous writes at 20 per second cannot take less than about 2 s; the kernel counts them.
            forked = os.fork()
            if forked == 0:  # pragma: no cover - the child
                (group / "cgroup.procs").write_text(str(os.getpid()))
                os._exit(0 if _dsync_writes(path / "slow", 40) >= 1.5 else 3)
            _, status = os.waitpid(forked, 0)
            assert os.waitstatus_to_exitcode(status) == 0, "40 O_DSYNC writes went faster than the throttle allows"
            served = (group / "blkio.throttle.io_serviced").read_text()
            assert f"{claimfs.device(path)} Write" in served
        assert slowdisk.groups(os.getpid()) == []  # released
        assert pids <= set((slowdisk.BLKIO / "cgroup.procs").read_text().split())
    finally:
        kubelet.stop()


def test_a_new_claim_of_the_same_name_gets_a_new_empty_volume(kube, namespace, toy_image) -> None:
    """As a dynamic provisioner gives a new claim a new volume: the engine replaces a volume whose data
    fails by deleting the claim and creating one of the same name later (plan/stuck.py)."""
    core = client.CoreV1Api(kube.api_client())
    _claim(core, namespace, "data", "32Mi")
    kubelet = make_kubelet(kube, toy_image, namespace=namespace, sized_claims=True).start()
    pod = _pod(kubelet)
    try:
        _start(core, namespace, pod)
        exec_ok(kubelet, namespace, "p", "c", "write", "/var/lib/pooler/old", "the old claim's")
        delete_and_wait(core, namespace, "p")
        core.delete_namespaced_persistent_volume_claim("data", namespace)
        eventually(lambda: not core.list_namespaced_persistent_volume_claim(namespace).items, 60, what="claim gone")
        _claim(core, namespace, "data", "32Mi")
        _start(core, namespace, pod)
        path = kubelet.pvc_path(namespace, "data")
        assert os.path.ismount(path) and not (path / "old").exists()
        assert len(claimfs.mounts(f"{claimfs.SOURCE_PREFIX}{kubelet.instance}")) == 1  # the old one went
    finally:
        kubelet.stop()


def test_a_disk_full_fault_refuses_a_plain_directory(tmp_path: Path) -> None:
    with pytest.raises(faults.FaultError, match="plain directory, not a filesystem of its own"), \
            faults.disk_full_at(tmp_path):
        pass


def test_sweep_unmounts_the_claims_of_a_dead_kubelet_only(process_kubelet) -> None:
    dead, live = podnet.new_instance_id(), process_kubelet.instance
    dirs = [Path(tempfile.mkdtemp(prefix="mgp-claimfs-")) for _ in range(2)]
    try:
        claimfs.mount_sized(dirs[0], 8 * MIB, 0, 0, dead)
        claimfs.mount_sized(dirs[1], 8 * MIB, 0, 0, live)
        removed = kubelet_module.sweep()
        assert f"mount/{dirs[0]}" in removed
        assert not os.path.ismount(dirs[0]) and os.path.ismount(dirs[1])
        assert not list(claimfs.IMAGES.glob(f"{claimfs.SOURCE_PREFIX}{dead}-*"))
        assert list(claimfs.IMAGES.glob(f"{claimfs.SOURCE_PREFIX}{live}-*"))
    finally:
        for d in dirs:
            if os.path.ismount(d):
                claimfs.unmount(str(d))
            d.rmdir()


def test_a_claim_size_must_be_a_positive_quantity() -> None:
    assert claimfs.requested_bytes({"spec": {"resources": {"requests": {"storage": "1Gi"}}}}) == 1 << 30
    with pytest.raises(claimfs.ClaimSizeError, match=r"'data': spec.resources.requests.storage '0' is not"):
        claimfs.requested_bytes({"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "0"}}}})
