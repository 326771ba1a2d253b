"""A clone (spec.backup.cloneFrom) through the engine on the real apiserver: refused with the field
named and nothing created while its source is missing; then the source's password copied into the
clone's own Secret, the copy pod created with the source's backup volume read-only, no pool pod until
the copy ended, the record and status.clone at each step, and the CRD's refusal of a cloneFrom added
to a running shard. The whole clone on real Multigres v0.1.0: tests/integration/multigres/
test_clone_on_multigres.py."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient, KubeError
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.state import clone, facts

from tests.integration.reconcile.rig import create_shard, read_shard, spec

pytestmark = pytest.mark.cluster

V01 = {"multigres": {"version": "v0.1.0"}}


def _of(client: KubeClient, namespace: str, kind: str, cluster: str, component: str | None = None) -> list[str]:
    selector = f"{keys.LABEL_APP_INSTANCE}={cluster}" + (f",{keys.LABEL_APP_COMPONENT}={component}"
                                                          if component else "")
    return sorted(facts.name(o) for o in client.list("v1", kind, namespace, selector))


def _condition(shard: Manifest, ctype: str) -> dict[str, Any]:
    return next(c for c in shard["status"]["conditions"] if c["type"] == ctype)


def _secret_value(client: KubeClient, namespace: str, name: str) -> str:
    found = client.get("v1", "Secret", namespace, name)
    assert found is not None
    return base64.b64decode(found["data"]["password"]).decode()


def test_a_clone_waits_for_its_source_then_copies_before_any_pool_pod(rig, shard_crd):  # type: ignore[no-untyped-def]
    client, ns = rig.client, rig.namespace
    clone_spec = {**spec(2), **V01, "clusterName": "clone",
                  "globalTopoServer": {"address": "topo.invalid:2379", "rootPath": "/multigres/clone"},
                  "backup": {"cloneFrom": {"shard": "demo"}}}
    create_shard(client, ns, "clone", clone_spec)
    refused = run_pass(client, Request(namespace=ns, name="clone"))
    assert refused.failed and refused.errors == [
        f"spec.backup.cloneFrom.shard: no MultigresShard 'demo' in namespace {ns}: nothing is created until it exists"]
    waiting = read_shard(client, ns, "clone")
    assert _condition(waiting, keys.ShardCondition.CONFIGURATION_VALID)["status"] == "False"
    for kind in ("Pod", "PersistentVolumeClaim", "Secret"):
        assert _of(client, ns, kind, "clone") == [], kind

    rig.create_cr({**spec(2), **V01})  # the source, "demo"
    rig.settle(name="demo")
    source_pw = _secret_value(client, ns, naming.password_secret_name(naming.ShardId("demo", "postgres", "default",
                                                                                       "0-inf")))
    first = run_pass(client, Request(namespace=ns, name="clone"))
    # Its finalizer changed the shard first, so the record's conditional write conflicts and the pass
    # ends there: no copy pod without its record.
    assert [a["result"] for a in first.actions if a["kind"] == keys.SHARD_KIND][-1] == "conflict"
    assert _of(client, ns, "Pod", "clone") == []
    started = run_pass(client, Request(namespace=ns, name="clone"))
    assert not started.failed, started.msg
    clone_sid = naming.ShardId("clone", "postgres", "default", "0-inf")
    assert _secret_value(client, ns, naming.password_secret_name(clone_sid)) == source_pw
    copy_name = naming.clone_copy_pod_name(clone_sid)
    assert _of(client, ns, "Pod", "clone") == [copy_name]  # the copy pod and no pool pod
    pod = client.get("v1", "Pod", ns, copy_name)
    assert pod is not None
    claims = {v["name"]: v["persistentVolumeClaim"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}
    source_pvc = naming.shard_backup_pvc_name(naming.ShardId("demo", "postgres", "default", "0-inf"))
    assert claims["source"] == {"claimName": source_pvc, "readOnly": True}
    assert claims["target"]["claimName"] == naming.shard_backup_pvc_name(clone_sid)
    shard = read_shard(client, ns, "clone")
    assert json.loads(facts.annotations(shard)[keys.ANN_CLONE])["state"] == "Copying"
    assert shard["status"]["clone"]["state"] == "Copying"
    assert _condition(shard, keys.ShardCondition.CLONING)["reason"] == "CopyingRepository"
    assert not run_pass(client, Request(namespace=ns, name="clone")).failed
    assert _of(client, ns, "Pod", "clone", keys.COMPONENT_POOL) == []  # still copying: still no pool pod

    # The copy pod ends as the kubelet reports it (no kubelet runs here).
    terminated = {"exitCode": 0, "finishedAt": "2026-05-01T12:00:00Z", "reason": "Completed"}
    client.merge_patch("v1", "Pod", ns, copy_name, {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": keys.CLONE_COPY_CONTAINER, "image": "x", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": terminated}}]}}, field_manager="test", subresource="status")
    copied = run_pass(client, Request(namespace=ns, name="clone"))
    assert not copied.failed, copied.msg
    assert len(_of(client, ns, "Pod", "clone", keys.COMPONENT_POOL)) == 2  # created in the pass that saw the end
    shard = read_shard(client, ns, "clone")
    assert clone.record(shard)["state"] == "Copied"
    assert shard["status"]["clone"]["state"] == "Restoring"
    left = client.get("v1", "Pod", ns, copy_name)
    assert left is None or facts.is_terminating(left)
    # From now on the source is not needed: the clone goes on without it.
    client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, "demo")
    assert not run_pass(client, Request(namespace=ns, name="clone")).failed

    # The CRD refuses a change of source, and a cloneFrom added to a running shard.
    with pytest.raises(KubeError) as changed:
        client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, "clone",
                           {"spec": {"backup": {"cloneFrom": {"shard": "other"}}}}, field_manager="test")
    assert changed.value.status == 422 and "clone-from-at-creation" in str(changed.value)
