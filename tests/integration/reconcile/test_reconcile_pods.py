"""Scaling, rolling updates and hand-deleted pods through the engine, on the real apiserver.

The fake agent (tests/helpers/fake_agent.py) plays the agent's documented part; the kubelet helper
plays the kubelet. Everything else — server-side apply, preconditions, finalizers, the garbage
collector — is the real thing.
"""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground import poddns
from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _pod(i: int) -> str:
    return naming.pod_name(SID, POOL, CELL, i)


def _pvc(i: int) -> str:
    return naming.data_pvc_name(SID, POOL, CELL, i)


def test_scale_3_to_5_to_2_with_a_no_op_pass_between(rig):  # type: ignore[no-untyped-def]
    first = rig.run(spec(3))
    assert first.changed
    created = [a for a in first.actions
               if a["verb"] == "apply" and (a["kind"] == "Pod" or a["name"].startswith("data-"))]
    assert [a["kind"] for a in created] == ["PersistentVolumeClaim"] * 3 + ["Pod"] * 3  # one pass, PVCs first
    rig.settle(spec(3))
    assert sorted(rig.pods()) == [_pod(i) for i in range(3)]

    again = rig.run(spec(3))  # converged: reads only
    assert again.writes == 0 and not again.changed
    assert set(again.requests) <= {"get", "list"}

    rig.settle(spec(5))
    assert sorted(rig.pods()) == [_pod(i) for i in range(5)]
    primary = rig.primary()

    rig.settle(spec(2))
    pods = rig.pods()
    assert len(pods) == 2 and primary in pods
    assert all(facts.condition_true(p, "Ready") for p in pods.values())
    # whenScaled defaults to Delete: the PVCs of the removed pods are gone, the others stay
    assert sorted(n for n in rig.pvcs() if n.startswith("data-")) == sorted(f"data-{n}" for n in pods)
    drained = rig.drained_pods()
    assert len(drained) == 3 and primary not in drained


def test_rolling_update_of_the_image_touches_the_primary_last(rig):  # type: ignore[no-untyped-def]
    era_a = {**spec(3), "multigres": {"version": "d782aa06"}}  # the layout with pgctld in `containers`
    rig.settle(era_a)
    rig.agent.publish_roles(primary=_pod(1))
    before = {n: facts.uid(p) for n, p in rig.pods().items()}
    new_image = {"images": {"postgres": "ghcr.io/multigres/pgctld:sha-next"}}
    body = {**era_a, **new_image}
    saw_two_victims = False
    for _ in range(60):
        result = rig.run(body)
        pods = rig.pods()
        in_drain = [n for n, p in pods.items() if facts.annotations(p).get(keys.ANN_DRAIN_STATE)]
        saw_two_victims |= len(in_drain) > 1
        if result.writes == 0 and result.requeue_after == 0:
            break
        rig.world()
    drained = rig.drained_pods()
    assert drained[-1] == _pod(1), drained  # the primary last
    assert sorted(drained) == sorted(before) and len(drained) == 3  # each pod exactly once
    assert not saw_two_victims
    after = rig.pods()
    assert all(facts.uid(after[n]) != uid for n, uid in before.items())  # all recreated
    images = {c["image"] for p in after.values() for c in p["spec"]["containers"] if c["name"] == "postgres"}
    assert images == {"ghcr.io/multigres/pgctld:sha-next"}
    primary_drain = next(a for r in rig.results for a in r.actions
                         if a["verb"] == "patch" and a["name"] == _pod(1) and a["reason"].startswith("drain pod"))
    assert "primary last" in primary_drain["reason"] and "switchover requested" in primary_drain["reason"]


def test_replica_deleted_by_hand_is_drained_and_recreated_on_its_pvc(rig):  # type: ignore[no-untyped-def]
    rig.settle(spec(3))
    rig.agent.publish_roles(primary=_pod(0))
    pvc_uid = facts.uid(rig.pvcs()[_pvc(2)])
    rig.client.delete("v1", "Pod", rig.namespace, _pod(2))
    assert facts.is_terminating(rig.pods()[_pod(2)])  # our finalizer holds it

    first = rig.run(spec(3))
    drain = [a for a in first.actions if a["name"] == _pod(2) and a["verb"] == "patch"]
    assert drain and "external-deletion" in drain[0]["reason"]
    rig.settle(spec(3))
    pods = rig.pods()
    assert sorted(pods) == [_pod(i) for i in range(3)]
    assert not facts.is_terminating(pods[_pod(2)])
    assert facts.uid(rig.pvcs()[_pvc(2)]) == pvc_uid  # the same data volume


def test_check_mode_is_a_server_side_dry_run_with_a_plan_diff(rig):  # type: ignore[no-untyped-def]
    result = rig.run(spec(2), check=True, diff=True)
    assert result.changed
    assert rig.pods() == {}  # nothing was created
    assert "apply" in result.requests and result.diff[0]["prepared"].startswith("apply ")
    pod_diff = next(d for d in result.diff if d.get("after_header") == f"Pod/{_pod(0)}")
    assert "ghcr.io/multigres/pgctld" in pod_diff["after"] and pod_diff["before"] == ""


def _published(rig) -> set[str]:  # type: ignore[no-untyped-def]
    """The pods cluster DNS would answer for under the live headless Service, by name: the live
    selector over the live pods, as the EndpointSlice controller and CoreDNS read them (poddns; this
    cluster runs no endpointslice controller, the real node does)."""
    service = rig.client.get("v1", "Service", rig.namespace, naming.headless_service_name(SID, POOL, CELL))
    return {facts.name(p) for p in poddns.endpoints(service, rig.pods().values())}


def test_a_service_from_before_the_dns_label_keeps_every_pod_in_dns_while_it_moves_to_it(rig):  # type: ignore[no-untyped-def]
    """A shard made by a version without pools.multigres.com/dns (its Service selects the pool, its
    pods lack the label): the first pass labels the pods and leaves the selector; the next moves the
    selector; DNS answers for every pod before, between and after. A finished drain then takes its
    pod out before the pod is deleted."""
    rig.settle(spec(3))
    everyone = {_pod(i) for i in range(3)}
    assert _published(rig) == everyone
    service = naming.headless_service_name(SID, POOL, CELL)
    # What the older version left: its selector and unlabelled pods (as another field manager, so the
    # engine's own apply of the new selector is what has to bring the key back).
    rig.client.json_patch("v1", "Service", rig.namespace, service,
                          [{"op": "remove", "path": "/spec/selector/" + keys.LABEL_DNS.replace("/", "~1")}],
                          field_manager="test")
    for name in everyone:
        rig.client.merge_patch("v1", "Pod", rig.namespace, name, {"metadata": {"labels": {keys.LABEL_DNS: None}}},
                               field_manager="test")
    assert _published(rig) == everyone

    first = rig.run(spec(3))
    assert {a["name"] for a in first.actions if a["verb"] == "patch" and a["kind"] == "Pod"} == everyone
    assert not [a for a in first.actions if a["kind"] == "Service"]
    assert all(facts.labels(p).get(keys.LABEL_DNS) == keys.DNS_PUBLISHED for p in rig.pods().values())
    second = rig.run(spec(3))
    assert [(a["verb"], a["name"]) for a in second.actions if a["kind"] == "Service"] == [("apply", service)]
    assert keys.LABEL_DNS in rig.client.get("v1", "Service", rig.namespace, service)["spec"]["selector"]
    assert _published(rig) == everyone

    rig.run(spec(2))  # a scale-down: the engine asks for one drain
    (victim,) = [n for n, p in rig.pods().items() if facts.annotations(p).get(keys.ANN_DRAIN_STATE)]
    rig.agent.drain_all()
    assert facts.annotations(rig.pods()[victim]).get(keys.ANN_DRAIN_STATE) == keys.DrainState.READY_FOR_DELETION
    assert _published(rig) == everyone - {victim}  # out of DNS while the pod is still there
