"""A stopped agent becomes visible on the MultigresShard: a pod deleted from outside stays Terminating with
the agent's finalizer, is not counted as a replica, and past the threshold the engine reports
AgentStalled=True (with an event) naming it; once the agent is back the condition clears."""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.status import stalls

from tests.integration.reconcile.rig import Rig, spec


def _conditions(rig: Rig) -> dict[str, dict]:
    return {c["type"]: c for c in ((rig.cr() or {}).get("status") or {}).get("conditions") or []}


def _events(rig: Rig, reason: str) -> list[dict]:
    return [e for e in rig.client.list("v1", "Event", rig.namespace) if e.get("reason") == reason]


def test_a_pod_the_stopped_agent_never_releases_turns_agent_stalled_until_the_agent_is_back(rig, shard_crd) -> None:
    rig.create_cr(spec(3))
    rig.settle(name="demo")
    victim = sorted(rig.pods())[2]
    # From here on the agent is stopped: nobody removes the finalizer of a pod deleted from outside.
    rig.client.delete("v1", "Pod", rig.namespace, victim)
    result = rig.run(name="demo")
    pod = rig.pods()[victim]
    assert facts.is_terminating(pod) and keys.FINALIZER_POD in facts.finalizers(pod)
    assert _conditions(rig)[keys.ShardCondition.AGENT_STALLED]["status"] == "False"
    # The engine asks to be woken when the wait crosses the threshold, even if nothing else changes.
    assert 0 < result.requeue_after <= stalls.DEFAULT_AGENT_STALL_AFTER_S + 60

    rig.clock = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=stalls.DEFAULT_AGENT_STALL_AFTER_S + 120)
    rig.run(name="demo")
    stalled = _conditions(rig)[keys.ShardCondition.AGENT_STALLED]
    assert stalled["status"] == "True" and stalled["reason"] == "PodsWaitingForAgent", stalled
    assert f"pod {victim}: Terminating with finalizer {keys.FINALIZER_POD}" in stalled["message"]
    assert (rig.cr() or {})["status"]["readyReplicas"] == 2  # the Terminating pod is not a replica
    assert _events(rig, keys.ShardCondition.AGENT_STALLED)

    rig.settle(name="demo")  # the agent is back: it releases the pod, the engine replaces it
    cleared = _conditions(rig)[keys.ShardCondition.AGENT_STALLED]
    assert cleared["status"] == "False" and cleared["reason"] == "AgentProgressing"
    assert _events(rig, "AgentProgressing")
