"""`multigres-pools switchover` reads the operator's answer from status.switchover through the typed
status reader: only a decision newer than the one seen before asking, and only once the request
annotation is gone, is an answer."""

from __future__ import annotations

import json

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools import switchover_command

DECIDED = {"request": "any", "decision": "Accepted", "message": "moving the primary", "at": "2026-05-01T12:00:00Z",
           "state": "InProgress", "from": "p-0"}


def _cr(switchover: object, annotations: dict[str, str] | None = None) -> dict[str, object]:
    return {"metadata": {"name": "s", "annotations": annotations or {}}, "status": {"switchover": switchover}}


def test_the_answer_is_the_new_decision_once_the_request_is_gone() -> None:
    recorded = {keys.ANN_SWITCHOVER_STATE: json.dumps({"at": DECIDED["at"]})}
    answer = switchover_command._answer(_cr(DECIDED, recorded), None)
    assert answer is not None and (answer.state, answer.from_, answer.message) == ("InProgress", "p-0",
                                                                                    "moving the primary")
    before = switchover_command._shown(_cr(DECIDED))
    assert switchover_command._answer(_cr(DECIDED, recorded), before) is None  # the decision seen before asking
    pending = recorded | {keys.ANN_SWITCHOVER_REQUEST: "any"}
    assert switchover_command._answer(_cr(DECIDED, pending), None) is None  # not decided yet
    assert switchover_command._answer(_cr(DECIDED, {}), None) is None  # another request's decision


def test_a_status_without_a_readable_decision_is_no_answer() -> None:
    for shown in (None, {}, {"request": "any"}, "Accepted"):
        assert switchover_command._answer(_cr(shown), None) is None
