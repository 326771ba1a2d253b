"""Pruning of shared objects that left the desired set, and ConfigMap keys the engine stopped rendering
(docs/architecture.md, "Pruning")."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels

from .plan_factories import CR_UID, NOW, NS, SID, desired, desired_pool, healthy, observed, plan, shard_cr

OUR_REF = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "demo", "uid": CR_UID,
           "controller": True}


def _obj(kind: str, name: str, *, api: str = "v1", owner: dict | None = OUR_REF, managed: bool = True,
         **extra: object) -> dict:
    lab = labels.component_labels(SID, keys.COMPONENT_CONFIG)
    if not managed:
        lab.pop(keys.LABEL_APP_MANAGED_BY)
    md: dict = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "9", "labels": lab}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": api, "kind": kind, "metadata": md, **extra}


def _plan(others: dict, *, objects: tuple = (), cr: dict | None = None):  # type: ignore[no-untyped-def]
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    return plan(desired(dp, objects=objects), observed(pods, pvcs, cr=cr or shard_cr(), others=others), NOW)


def test_owned_object_that_left_the_desired_set_is_pruned_with_preconditions():
    policy = _obj("NetworkPolicy", "demo-np", api="networking.k8s.io/v1")
    result = _plan({"NetworkPolicy": (policy,)})
    (action,) = result.actions
    assert (action.verb, action.kind, action.name) == ("prune", "NetworkPolicy", "demo-np")
    assert (action.uid, action.resource_version, action.api_version) == ("uid-demo-np", "9", "networking.k8s.io/v1")
    assert result.lines() == ["prune NetworkPolicy/demo-np: owned by this shard and no longer rendered"]


def test_only_objects_the_shard_owns_are_pruned():
    other_owner = {**OUR_REF, "uid": "someone-else"}
    leaving = _obj("Deployment", "leaving", api="apps/v1")
    leaving["metadata"]["deletionTimestamp"] = "2026-05-01T11:00:00Z"
    others = {
        "ConfigMap": (_obj("ConfigMap", "user-made", owner=None),  # same labels, no ownerReference
                      _obj("ConfigMap", "other-shard", owner=other_owner),
                      _obj("ConfigMap", "no-managed-by", managed=False)),
        "Deployment": (leaving,),
    }
    assert _plan(others).actions == []


def test_pvcs_and_secrets_are_never_pruned_and_vars_mode_prunes_nothing():
    owned_pvc = _obj("PersistentVolumeClaim", "backup")
    owned_secret = _obj("Secret", "demo-pgbackrest-tls")
    assert _plan({"Secret": (owned_secret,)}).actions == []
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    assert plan(desired(dp), observed(pods, [*pvcs, owned_pvc]), NOW).actions == []
    vars_mode = plan(desired(dp), observed(pods, pvcs, others={"Service": (_obj("Service", "svc"),)}), NOW)
    assert vars_mode.actions == []


def test_desired_objects_are_not_pruned():
    svc = _obj("Service", "demo-svc", spec={"clusterIP": "None"})
    want = {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "demo-svc", "labels": svc["metadata"]["labels"]}, "spec": {"clusterIP": "None"}}
    assert _plan({"Service": (svc,)}, objects=(want,)).actions == []


def _configmap(data: dict, recorded: str | None = None) -> dict:
    cm = _obj("ConfigMap", "demo-config", data=data)
    if recorded is not None:
        cm["metadata"]["annotations"] = {keys.ANN_CONFIG_KEYS: recorded}
    return cm


def _want(data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "demo-config", "labels": labels.component_labels(SID, keys.COMPONENT_CONFIG)},
            "data": data}


def test_configmap_records_the_keys_it_applies():
    result = _plan({}, objects=(_want({"b": "2", "a": "1"}),))
    (action,) = result.actions
    assert action.body["metadata"]["annotations"][keys.ANN_CONFIG_KEYS] == "a,b"


def test_configmap_keys_we_wrote_and_no_longer_render_are_dropped_others_stay():
    live = _configmap({"a": "1", "old": "x", "theirs": "y"}, recorded="a,old")
    result = _plan({"ConfigMap": (live,)}, objects=(_want({"a": "1"}),))
    (action,) = result.actions
    assert action.verb == "apply" and action.body["data"] == {"a": "1"}
    assert action.reason == "update ConfigMap demo-config: drop data keys no longer rendered: old"
    settled = _configmap({"a": "1", "theirs": "y"}, recorded="a")
    assert _plan({"ConfigMap": (settled,)}, objects=(_want({"a": "1"}),)).actions == []
