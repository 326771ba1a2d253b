"""Reading a pool pod's topology from its multipooler args, and a MultigresShard's registration."""

from __future__ import annotations

from multigres_pools.agent import podinfo
from multigres_pools.dataplane.base import BackupLocationKind

ARGS = ["multipooler", "--grpc-port=15270", "--topo-global-server-addresses=etcd-a:2379,etcd-b:2379",
        "--topo-global-root=/multigres/global", "--cell=zone1", "--database=postgres", "--table-group=default",
        "--shard=0-inf", "--service-id=p-c250f84b"]


def pod(args=ARGS, sidecar=True) -> dict:
    container = {"name": "multipooler", "args": args}
    spec = {"initContainers": [container], "containers": []} if sidecar else {"containers": [container]}
    return {"metadata": {"name": "pod-0"}, "spec": spec}


def test_topology_from_sidecar_or_container() -> None:
    for sidecar in (True, False):
        top = podinfo.pod_topology(pod(sidecar=sidecar))
        assert top.topology.global_addresses == ("etcd-a:2379", "etcd-b:2379") and top.cell == "zone1"
        assert top.pooler_id.name == "p-c250f84b"
    assert podinfo.pod_topology(pod(ARGS[:4])) is None


def test_service_id_defaults_to_the_pod_name_hash() -> None:
    assert podinfo.pod_topology(pod(ARGS[:-1])).service_id == "p-" + __import__(
        "ansible_collections.multigres.pools.plugins.module_utils.core.naming", fromlist=["x"]).hash_parts("pod-0")


def test_containers_ready_absent_counts_as_ready() -> None:
    assert podinfo.containers_ready({"status": {}})
    assert not podinfo.containers_ready({"status": {"conditions": [{"type": "ContainersReady", "status": "False"}]}})


def test_cr_registration() -> None:
    cr = {"spec": {"globalTopoServer": {"address": "etcd:2379"}, "pools": {"a": {"cells": ["z2", "z1"]}},
                   "backup": {"type": "s3", "s3": {"bucket": "b", "region": "r", "keyPrefix": "k"},
                              "healthThreshold": "1h30m"},
                   "durabilityPolicy": "MULTI_CELL_AT_LEAST_2"}}
    topo = podinfo.cr_topology(cr)
    assert topo.cells == ("z1", "z2") and topo.global_root == "/multigres/global" and topo.shard == "0-inf"
    db = podinfo.cr_database(cr, topo.cells)
    assert db.backup_kind is BackupLocationKind.S3 and db.s3_key_prefix == "k"
    assert not db.s3_use_env_credentials  # no Secret, no flag: the instance's (or IRSA's) credentials
    assert podinfo.cr_backup_threshold_s(cr) == 5400


def test_a_credentials_secret_means_credentials_from_the_environment() -> None:
    """The pods carry the Secret as AWS_* variables, so the topology must tell v0.1.0 to read them."""
    for s3, expected in (({"credentialsSecret": "aws"}, True), ({"useEnvCredentials": True}, True),
                         ({"serviceAccountName": "irsa"}, False)):
        cr = {"spec": {"backup": {"type": "s3", "s3": {"bucket": "b", "region": "r", **s3}}}}
        assert podinfo.cr_database(cr, ("z1",)).s3_use_env_credentials is expected, s3


def test_one_topology_whatever_the_spelling() -> None:
    """Pods (or a CR) naming the same etcd servers differently group as one shard; dialling order kept."""
    def flag(value: str) -> list[str]:
        return [a if not a.startswith("--topo-global-server-addresses=") else f"--topo-global-server-addresses={value}"
                for a in ARGS]

    spellings = ["etcd-a:2379,etcd-b:2379", "http://ETCD-B:2379, etcd-a:2379", "etcd-b:2379,etcd-a:2379,etcd-b:2379"]
    tops = [podinfo.pod_topology(pod(flag(s))) for s in spellings]
    assert len({t.shard_key for t in tops}) == 1
    assert tops[1].topology.global_addresses == ("etcd-b:2379", "etcd-a:2379")
    cr = {"spec": {"globalTopoServer": {"address": "HTTP://etcd-b:2379,etcd-a:2379"},
                   "pools": {"a": {"cells": ["zone1"]}}}}
    assert podinfo.cr_topology(cr).key == tops[0].shard_key
    # An address no client could dial is not read as some other topology: the pod/CR is left alone.
    assert podinfo.pod_topology(pod(flag("etcd-a"))) is None
    assert podinfo.cr_topology({"spec": {"globalTopoServer": {"address": "etcd:2379,"}}}) is None
