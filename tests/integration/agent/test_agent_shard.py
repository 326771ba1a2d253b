"""MultigresShard-driven work: database registration, backup health, topology cleanup on deletion."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from kubernetes import client
from kubernetes.client.rest import ApiException

from multigres_pools.agent.context import AgentConfig
from multigres_pools.install.crd import shard_crd
from multigres_pools.proto.gen import clustermetadata_pb2 as cm


@pytest.fixture(scope="session")
def shard_crd_installed(kube) -> None:
    ext = client.ApiextensionsV1Api(kube.api_client())
    try:
        ext.create_custom_resource_definition(shard_crd())
    except ApiException as exc:
        if exc.status == 422:
            pytest.skip(f"the MultigresShard CRD is rejected by the API server: {exc.body[:300]}")
        if exc.status != 409:
            raise
    custom = client.CustomObjectsApi(kube.api_client())
    for _ in range(100):  # the new resource takes a moment to be served
        try:
            custom.list_cluster_custom_object(keys.API_GROUP, keys.API_VERSION, keys.SHARD_PLURAL)
            return
        except ApiException:
            time.sleep(0.1)


def _create_shard(rig, **spec_extra) -> dict:
    custom = client.CustomObjectsApi(rig.api)
    body = {
        "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
        "metadata": {"name": naming.shard_resource_name(rig.sid), "namespace": rig.namespace},
        "spec": {"clusterName": rig.sid.cluster,
                 "globalTopoServer": {"address": rig.etcd_endpoint.removeprefix("http://"), "rootPath": rig.root},
                 "pools": {"default": {"cells": ["zone1"]}}, **spec_extra},
    }
    return custom.create_namespaced_custom_object(keys.API_GROUP, keys.API_VERSION, rig.namespace,
                                                  keys.SHARD_PLURAL, body)


def _get(rig, cr) -> dict:
    return client.CustomObjectsApi(rig.api).get_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL, cr["metadata"]["name"])


def _stamp(now: datetime, delta: timedelta) -> str:
    """A pgBackRest label time `delta` before `now`. Every label of a test derives from one instant:
    two clock reads straddling a second gave the same backup two different labels."""
    return (now - delta).strftime("%Y%m%d-%H%M%S")


def test_backup_health_picks_the_newest_complete(rig_factory, shard_crd_installed) -> None:
    rig = rig_factory()
    cr = _create_shard(rig)
    primary = rig.primary_peer
    now = datetime.now(UTC)
    old_full = _stamp(now, timedelta(days=3)) + "F"
    diffs = [f"{old_full}_{_stamp(now, timedelta(days=3) - timedelta(hours=5 * i))}D" for i in range(12)]
    for label in diffs:  # more than era A's usual limit=10, which would keep only the oldest ones
        primary.add_backup(label, "diff")
    primary.add_backup(f"{old_full}_{_stamp(now, timedelta(hours=1))}I", "incr", complete=False)
    agent = rig.agent()
    agent.on_shard(_get(rig, cr))
    verdict = json.loads(_get(rig, cr)["metadata"]["annotations"][keys.ANN_BACKUP_HEALTH])
    newest = diffs[-1]  # 17 h old; the incremental one hour old is not complete
    assert verdict["healthy"] and verdict["lastBackupId"] == newest and verdict["lastBackupType"] == "diff"
    assert rig.events("BackupHealthy")


def test_backup_health_stale_and_check_failure(rig_factory, shard_crd_installed) -> None:
    rig = rig_factory()
    cr = _create_shard(rig, backup={"healthThreshold": "1h"})
    rig.primary_peer.add_backup(_stamp(datetime.now(UTC), timedelta(hours=2)) + "F")
    agent = rig.agent()
    agent.on_shard(_get(rig, cr))
    verdict = json.loads(_get(rig, cr)["metadata"]["annotations"][keys.ANN_BACKUP_HEALTH])
    assert not verdict["healthy"] and verdict["reason"] == "BackupStale" and rig.events("BackupStale")
    rig.primary_peer.inject_unavailable(True)
    from multigres_pools.agent import backup_health

    assert backup_health.check(agent.ctx, _get(rig, cr)) is None and rig.events("BackupCheckFailed")


def test_registration_from_the_shard(rig_factory, shard_crd_installed) -> None:
    rig = rig_factory(config=AgentConfig())
    _create_shard(rig, durabilityPolicy="MULTI_CELL_AT_LEAST_2", pools={"default": {"cells": ["zone1", "zone2"]}},
                  backup={"type": "s3", "s3": {"bucket": "bkt", "region": "eu-1"}})
    for name in rig.names:  # what the renderer does: pods are owned by their MultigresShard
        cr = _get(rig, {"metadata": {"name": naming.shard_resource_name(rig.sid)}})
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"ownerReferences": [{
            "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": cr["metadata"]["name"],
            "uid": cr["metadata"]["uid"]}]}})
    rig.run(rig.agent())
    db = cm.Database.FromString(rig.etcd.get(naming.database_key(rig.root, "postgres"))[0])
    assert db.backup_location.s3.bucket == "bkt" and sorted(db.cells) == ["zone1", "zone2"]
    assert db.bootstrap_durability_policy.quorum_type == cm.QUORUM_TYPE_MULTI_CELL_AT_LEAST_N
    assert rig.etcd.get(naming.cell_key(rig.root, "zone1")) is not None
    assert rig.events("TopoRegistered")


def test_registration_without_a_shard_only_creates(rig_factory) -> None:
    rig = rig_factory(config=AgentConfig())
    rig.run(rig.agent())
    db = cm.Database.FromString(rig.etcd.get(naming.database_key(rig.root, "postgres"))[0])
    assert db.backup_location.filesystem.path == "/backups" and db.bootstrap_durability_policy.required_count == 2


def test_topology_cleanup_handshake(rig_factory, shard_crd_installed) -> None:
    rig = rig_factory(config=AgentConfig())
    cr = _create_shard(rig)
    for name in rig.names:  # the engine's pods: the cleanup removes only records of pods the shard controls
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"ownerReferences": [{
            "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": cr["metadata"]["name"],
            "uid": cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]}})
    rig.run(rig.agent())
    assert rig.etcd.get(naming.database_key(rig.root, "postgres")) is not None
    custom = client.CustomObjectsApi(rig.api)
    custom.patch_namespaced_custom_object(keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL,
                                          cr["metadata"]["name"], {"metadata": {"annotations": {
                                              keys.ANN_TOPOLOGY_CLEANUP: keys.TopologyCleanup.REQUESTED.value}}},
                                          _content_type="application/merge-patch+json")
    rig.agent().on_shard(_get(rig, cr))
    assert _get(rig, cr)["metadata"]["annotations"][keys.ANN_TOPOLOGY_CLEANUP] == "done"
    assert rig.etcd.get_prefix(rig.root + "/") == []
    assert rig.events("TopoCleanup")
