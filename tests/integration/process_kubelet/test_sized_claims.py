"""Claims as filesystems of their own (claimfs), the ground of the disk-full fault: a kubelet started
with sized_claims mounts a tmpfs of the claim's requested size at its directory before the pod starts,
the containers write into it and run out of space there, stop() unmounts it, and sweep() unmounts
what a kubelet whose owner died left mounted."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from kubernetes import client

from multigres_pools.playground import claimfs, faults, podnet
from multigres_pools.playground import process_kubelet as kubelet_module

from .conftest import make_kubelet, toy, toy_pod
from .test_process_kubelet import exec_ok, running

pytestmark = pytest.mark.cluster
MIB = 1 << 20


def _claim(core: client.CoreV1Api, namespace: str, name: str, size: str) -> None:
    core.create_namespaced_persistent_volume_claim(namespace, {"metadata": {"name": name}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}})


def test_a_sized_claim_fills_up_inside_the_pod_and_goes_with_the_kubelet(kube, namespace, toy_image) -> None:
    core = client.CoreV1Api(kube.api_client())
    _claim(core, namespace, "data", "8Mi")
    kubelet = make_kubelet(kube, toy_image, namespace=namespace, sized_claims=True).start()
    try:
        core.create_namespaced_pod(namespace, toy_pod(
            "p", toy("c", "run", volumeMounts=[{"name": "data", "mountPath": "/var/lib/pooler"}]),
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}], nodeName=kubelet.node_name))
        running(core, namespace, "p")
        path = kubelet.pvc_path(namespace, "data")
        assert os.path.ismount(path)
        fs = os.statvfs(path)
        assert fs.f_blocks * fs.f_frsize == 8 * MIB
        _, uid, _ = exec_ok(kubelet, namespace, "p", "c", "stat", "/var/lib/pooler").split()
        assert int(uid) == kubelet.uid  # the pod's user owns its filesystem's root
        exec_ok(kubelet, namespace, "p", "c", "write", "/var/lib/pooler/kept", "before")
        assert (path / "kept").read_text() == "before"  # the pod writes into the claim's filesystem

        with faults.disk_full_at(path) as taken:
            assert 7 * MIB < taken <= 8 * MIB
            full = kubelet.exec(namespace, "p", "c", ["toy", "write", "/var/lib/pooler/more", "x" * 8192])
            assert full.returncode != 0 and "No space left on device" in full.stderr
        assert not (path / faults.FILLER).exists()  # healed
        exec_ok(kubelet, namespace, "p", "c", "write", "/var/lib/pooler/more", "x" * 8192)
    finally:
        kubelet.stop()
    assert not claimfs.mounts(f"{claimfs.SOURCE_PREFIX}{kubelet.instance}")


def test_a_disk_full_fault_refuses_a_plain_directory(tmp_path: Path) -> None:
    with pytest.raises(faults.FaultError, match="plain directory, not a filesystem that can fill up"), \
            faults.disk_full_at(tmp_path):
        pass


def test_sweep_unmounts_the_claims_of_a_dead_kubelet_only(process_kubelet) -> None:
    dead, live = podnet.new_instance_id(), process_kubelet.instance
    dirs = [Path(tempfile.mkdtemp(prefix="mgp-claimfs-")) for _ in range(2)]
    try:
        claimfs.mount_sized(dirs[0], MIB, 0, 0, dead)
        claimfs.mount_sized(dirs[1], MIB, 0, 0, live)
        removed = kubelet_module.sweep()
        assert f"mount/{dirs[0]}" in removed
        assert not os.path.ismount(dirs[0]) and os.path.ismount(dirs[1])
    finally:
        for d in dirs:
            if os.path.ismount(d):
                claimfs.unmount(str(d))
            d.rmdir()


def test_a_claim_size_must_be_a_positive_quantity() -> None:
    assert claimfs.requested_bytes({"spec": {"resources": {"requests": {"storage": "1Gi"}}}}) == 1 << 30
    with pytest.raises(claimfs.ClaimSizeError, match=r"'data': spec.resources.requests.storage '0' is not"):
        claimfs.requested_bytes({"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "0"}}}})
