"""Forged pods and MultigresShards against the agent (real apiserver, real etcd): pods that copy a
shard's labels and multipooler flags, in its namespace or another, and MultigresShards that copy its
topology and ask for a topology cleanup, leave every record of the real shard in place."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from kubernetes import client

from multigres_pools.agent.context import AgentConfig
from multigres_pools.agent.kube import Kube
from tests.integration.agent.test_agent_shard import shard_crd_installed  # noqa: F401 (fixture)

pytestmark = pytest.mark.cluster


def _shard(rig, namespace: str, name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    body = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
            "spec": {"clusterName": rig.sid.cluster,
                     "globalTopoServer": {"address": rig.etcd_endpoint.removeprefix("http://"), "rootPath": rig.root},
                     "pools": {"default": {"cells": ["zone1"]}}}}
    return client.CustomObjectsApi(rig.api).create_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, namespace, keys.SHARD_PLURAL, body)


def _controller(cr: dict[str, Any], uid: str | None = None, blocking: bool = True) -> list[dict[str, Any]]:
    """The controller reference the engine writes (blocking), or a copy of it."""
    return [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": cr["metadata"]["name"],
             "uid": uid or cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": blocking}]


def _forged_pod(rig, namespace: str, name: str, owner: list[dict[str, Any]] | None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A copy of the real primary's pod (labels, flags: its service id), under another name, asking
    for a drain, then deleted: its finalizer makes the agent's finalize path look at it."""
    real = rig.pod(rig.names[0])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": dict(real["metadata"]["labels"]),
                        "annotations": {keys.ANN_DRAIN_STATE: keys.DrainState.REQUESTED.value,
                                        keys.ANN_DRAIN_REASON: keys.DrainReason.SCALE_DOWN.value},
                        "finalizers": [keys.FINALIZER_POD], **({"ownerReferences": owner} if owner else {})},
           "spec": copy.deepcopy(real["spec"])}
    pod["spec"].pop("nodeName", None)
    core = client.CoreV1Api(rig.api)
    core.create_namespaced_pod(namespace, pod)
    core.delete_namespaced_pod(name, namespace)
    return Kube(rig.client).get_pod(namespace, name)


def _records(rig) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    return {k if isinstance(k, str) else k.decode(): v for k, v in rig.etcd.get_prefix(rig.root + "/")}


def test_forged_pods_and_shards_leave_the_real_records_in_place(rig_factory, shard_crd_installed,  # noqa: F811
                                                                other_namespace) -> None:
    rig = rig_factory(config=AgentConfig())
    real = _shard(rig, rig.namespace, naming.shard_resource_name(rig.sid))
    for name in rig.names:  # what the engine does: the shard controls its pods
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"ownerReferences": _controller(real)}})
    agent = rig.agent()
    rig.run(agent)
    before = _records(rig)
    assert naming.database_key(rig.root, "postgres") in before and all(rig.record_exists(n) for n in rig.names)

    # 1. In the shard's namespace: a pod naming the real shard as controller with a made-up uid.
    liar = _forged_pod(rig, rig.namespace, "forged-same-ns", _controller(real, uid=str(uuid.uuid4())))
    agent.on_pod(liar)
    # ... and one with the real uid, copied without blockOwnerDeletion (what a pod creator may write).
    copied = _forged_pod(rig, rig.namespace, "forged-copied-ref", _controller(real, blocking=False))
    agent.on_pod(copied)
    # 2. In another namespace: an unowned pod (served as a vars-mode pod) copying the primary's flags,
    #    and one owned by a MultigresShard made there with the same topology.
    copycat_elsewhere = _shard(rig, other_namespace, "copycat")
    agent.on_pod(_forged_pod(rig, other_namespace, "forged-unowned", None))
    agent.on_pod(_forged_pod(rig, other_namespace, "forged-owned", _controller(copycat_elsewhere)))
    # 3. MultigresShards with the same topology that ask for a topology cleanup, here and elsewhere.
    cleanup = {keys.ANN_TOPOLOGY_CLEANUP: keys.TopologyCleanup.REQUESTED.value}
    here = _shard(rig, rig.namespace, "copycat-here", cleanup)
    elsewhere = _shard(rig, other_namespace, "copycat-cleanup", cleanup)
    agent.on_shard(here)
    agent.on_shard(elsewhere)
    rig.run(agent)

    after = _records(rig)
    assert set(after) >= set(before), sorted(set(before) - set(after))
    assert all(rig.record_exists(n) for n in rig.names)
    assert naming.database_key(rig.root, "postgres") in after
    assert rig.state(rig.names[0]) is None and rig.role(rig.names[0]) == keys.Role.PRIMARY
    # The liar keeps its finalizer: the agent never acted on it.
    for forged in ("forged-same-ns", "forged-copied-ref"):
        assert keys.FINALIZER_POD in (Kube(rig.client).get_pod(rig.namespace, forged)["metadata"]["finalizers"])
    kept = [e for e in rig.events("TopoCleanup") if "kept (not this MultigresShard's)" in (e.message or "")]
    assert kept, [e.message for e in rig.events("TopoCleanup")]

    # The real shard's own cleanup still removes everything.
    client.CustomObjectsApi(rig.api).patch_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL, real["metadata"]["name"],
        {"metadata": {"annotations": cleanup}}, _content_type="application/merge-patch+json")
    for name in rig.names:  # as on a real deletion: the engine deletes the pods before the agent cleans up
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"finalizers": None}})
        rig.core.delete_namespaced_pod(name, rig.namespace, grace_period_seconds=0)
    agent.on_shard(client.CustomObjectsApi(rig.api).get_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL, real["metadata"]["name"]))
    assert not any(rig.record_exists(n) for n in rig.names)


def test_the_shard_selector_limits_the_agent_to_labelled_shards(rig_factory, shard_crd_installed) -> None:  # noqa: F811
    rig = rig_factory()
    real = _shard(rig, rig.namespace, naming.shard_resource_name(rig.sid))
    for name in rig.names:
        rig.core.patch_namespaced_pod(name, rig.namespace, {"metadata": {"ownerReferences": _controller(real)}})
    replica = rig.names[1]
    rig.request_drain(replica)
    selective = rig.agent(config=AgentConfig(register_topology=False, shard_selector="team=db"))
    rig.run(selective, replica)
    assert rig.state(replica) == keys.DrainState.REQUESTED.value  # not selected: untouched
    client.CustomObjectsApi(rig.api).patch_namespaced_custom_object(
        keys.API_GROUP, keys.API_VERSION, rig.namespace, keys.SHARD_PLURAL, real["metadata"]["name"],
        {"metadata": {"labels": {"team": "db"}}}, _content_type="application/merge-patch+json")
    rig.run(selective, replica)
    assert rig.state(replica) != keys.DrainState.REQUESTED.value  # selected: the drain advances
