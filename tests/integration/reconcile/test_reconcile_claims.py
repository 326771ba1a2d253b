"""Two MultigresShards naming one topology root or one S3 repository, through the engine on the real
apiserver (state/claims.py): the one created later is refused with the field and the holder named
and nothing of it is created or changed; given a location of its own, it goes on."""

from __future__ import annotations

import time
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.integration.reconcile.rig import create_shard, read_shard, spec

pytestmark = pytest.mark.cluster

S3 = {"type": "s3", "s3": {"bucket": "backups", "region": "us-east-1", "endpoint": "minio.storage:9000",
                           "keyPrefix": "orders"}}


def _create(client: KubeClient, namespace: str, name: str, body: Manifest) -> Manifest:
    """A MultigresShard created after every earlier one: creationTimestamp counts whole seconds, and
    within one second the holder would be the first by namespace and name."""
    time.sleep(1.0 - time.time() % 1.0 + 0.05)
    return create_shard(client, namespace, name, body)


def _pods_of(client: KubeClient, namespace: str, cluster: str) -> dict[str, str]:
    """Pool pod name -> uid of the shard whose clusterName is `cluster`."""
    found = client.list("v1", "Pod", namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL},"
                                                f"{keys.LABEL_APP_INSTANCE}={cluster}")
    return {facts.name(p): facts.uid(p) or "" for p in found}


def _valid(shard: Manifest) -> dict[str, Any]:
    return next(c for c in shard["status"]["conditions"] if c["type"] == keys.ShardCondition.CONFIGURATION_VALID)


def test_a_copy_on_the_same_topology_root_is_refused_until_it_has_its_own(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    original = _pods_of(rig.client, rig.namespace, "demo")
    assert len(original) == 2
    # The same manifest under another name and cluster name, the topology left as it was: endpoints
    # spelled another way (scheme, a namespace-qualified Service name) are the same servers.
    body = {**spec(2), "clusterName": "copy",
            "globalTopoServer": {"address": "http://TOPO.invalid:2379", "rootPath": "/multigres/global"}}
    _create(rig.client, rig.namespace, "copy", body)
    refused = run_pass(rig.client, Request(namespace=rig.namespace, name="copy"))
    assert refused.failed
    (error,) = refused.errors
    assert error.startswith("spec.globalTopoServer: the topology topo.invalid:2379 root /multigres/global "
                            f"(shard postgres/default/0-inf) is already MultigresShard {rig.namespace}/demo's"), error
    assert "globalTopoServer.rootPath" in error
    copy_cr = read_shard(rig.client, rig.namespace, "copy")
    assert copy_cr["status"]["phase"] == "Degraded" and _valid(copy_cr)["status"] == "False"
    assert _valid(copy_cr)["message"].startswith("spec.globalTopoServer:")
    assert _pods_of(rig.client, rig.namespace, "copy") == {}
    assert rig.client.list("v1", "PersistentVolumeClaim", rig.namespace, f"{keys.LABEL_APP_INSTANCE}=copy") == []
    assert _pods_of(rig.client, rig.namespace, "demo") == original  # the holder is not touched
    # The holder's own pass is not disturbed by the younger copy.
    assert not run_pass(rig.client, Request(namespace=rig.namespace, name="demo")).failed

    rig.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "copy",
                           {"spec": {"globalTopoServer": {"rootPath": "/multigres/copy"}}}, field_manager="test")
    allowed = run_pass(rig.client, Request(namespace=rig.namespace, name="copy"))
    assert not allowed.failed, allowed.msg
    assert len(_pods_of(rig.client, rig.namespace, "copy")) == 2


def test_an_edit_naming_another_shards_root_changes_nothing(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    _create(rig.client, rig.namespace, "later", {**spec(2), "clusterName": "later",
                                                 "globalTopoServer": {"address": "topo.invalid:2379",
                                                                      "rootPath": "/multigres/later"}})
    assert not run_pass(rig.client, Request(namespace=rig.namespace, name="later")).failed
    before = _pods_of(rig.client, rig.namespace, "later")
    specs = {n: p["spec"] for n, p in rig.pods().items() if n in before}
    # Its rootPath edited to the older shard's, together with a change that would roll its pods.
    rig.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "later",
                           {"spec": {"globalTopoServer": {"rootPath": "/multigres/global"},
                                     "logLevels": {"multipooler": "debug"}}}, field_manager="test")
    for _ in range(2):  # the refusal holds on the next pass too, when the status names the generation
        refused = run_pass(rig.client, Request(namespace=rig.namespace, name="later"))
        assert refused.failed and refused.errors[0].startswith("spec.globalTopoServer:"), refused.errors
    assert _pods_of(rig.client, rig.namespace, "later") == before
    assert {n: p["spec"] for n, p in rig.pods().items() if n in before} == specs


def test_an_s3_repository_is_claimed_across_the_operators_namespaces(rig, shard_crd, other_namespace):  # type: ignore[no-untyped-def]
    rig.create_cr({**spec(2), "backup": S3})
    rig.settle(name="demo")
    # Another namespace, its own topology root, the same bucket and key prefix (a slash more).
    other = {**spec(2), "globalTopoServer": {"address": "topo.invalid:2379", "rootPath": "/multigres/staging"},
             "backup": {**S3, "s3": {**S3["s3"], "keyPrefix": "/orders/", "endpoint": "https://minio.storage:9000"}}}
    _create(rig.client, other_namespace, "demo", other)
    watched = (rig.namespace, other_namespace)
    refused = run_pass(rig.client, Request(namespace=other_namespace, name="demo", claim_namespaces=watched))
    assert refused.failed
    assert refused.errors == [
        "spec.backup.s3: the S3 repository s3://backups/orders/multigres at minio.storage:9000 is already "
        f"MultigresShard {rig.namespace}/demo's (created earlier); two MultigresShards there would restore "
        "each other's backups and archive two histories into one repository. Give this one its own "
        f"backup.s3.keyPrefix (or bucket), or delete {rig.namespace}/demo first"]
    assert _pods_of(rig.client, other_namespace, "demo") == {}

    rig.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, other_namespace, "demo",
                           {"spec": {"backup": {"s3": {"keyPrefix": "orders-staging"}}}}, field_manager="test")
    allowed = run_pass(rig.client, Request(namespace=other_namespace, name="demo", claim_namespaces=watched))
    assert not allowed.failed, allowed.msg
    assert len(_pods_of(rig.client, other_namespace, "demo")) == 2
