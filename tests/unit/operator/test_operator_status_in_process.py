"""A status-only decision is carried out by the operator itself (decide.py): the status and its
transition events, written as the module writes them, with no playbook run; refused while this
instance's leadership is in doubt, and retried with backoff when the API server refuses it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.operator.cache import SHARD
from multigres_pools.operator.controller import Controller, Settings
from multigres_pools.operator.outcome import Result
from tests.helpers.merge_patch import merge_patch as deep_merge
from tests.unit.operator.test_operator_cache import NAME, NS, Cache, converge, shard


class Recording:
    """The operator's live client: records every write; `refuse` makes the status write fail."""

    def __init__(self, refuse: bool = False) -> None:
        self.writes: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.refuse = refuse

    def apply(self, body: dict[str, Any], field_manager: str, **kw: Any) -> dict[str, Any]:
        if self.refuse:
            raise RuntimeError("409 Conflict")
        self.writes.append(("apply", body, {"field_manager": field_manager, **kw}))
        return body

    def create(self, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        self.writes.append(("create", body, kw))
        return body


class NoRuns:
    """A runner that must not be used: a status-only decision starts no playbook."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a playbook run was started ({name})")


def _controller(tmp_path: Path, client: Recording, leader: bool = True) -> Controller:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cache = Cache()
    cache.apply(SHARD, "ADDED", shard(), None)
    converge(cache, tmp_path)
    cr = cache.shard((NS, NAME))
    cache.apply(SHARD, "MODIFIED", deep_merge(cr, {"metadata": {"generation": 2}}), cr)  # status-only
    ctl = Controller(NoRuns(tmp_path), Settings(concurrency=1, warm_runners=False),  # type: ignore[arg-type]
                     cache=cache, live=lambda: client, may_write=lambda: leader)  # type: ignore[arg-type,return-value]
    ctl.router.shard_event(None, cache.shard((NS, NAME)))  # as the informer announces it: the shard is known
    return ctl


def test_a_status_only_decision_is_written_by_the_operator_without_a_run(tmp_path: Path) -> None:
    client = Recording()
    ctl = _controller(tmp_path, client)
    outcome = asyncio.run(ctl.reconcile((NS, NAME)))
    assert outcome.result is Result.CONVERGED
    status = [(body, kw) for verb, body, kw in client.writes if verb == "apply"]
    assert len(status) == 1
    body, kw = status[0]
    assert kw == {"field_manager": keys.STATUS_FIELD_MANAGER, "dry_run": False, "subresource": "status"}
    assert body["kind"] == keys.SHARD_KIND and body["metadata"] == {"name": NAME, "namespace": NS}
    assert body["status"]["observedGeneration"] == 2
    assert ctl.verdicts[(NS, NAME)].reason == "status" and not ctl.playbook_passes
    assert ctl.metrics.status_writes._value.get() == 1  # type: ignore[attr-defined]


def test_nothing_is_written_while_leadership_is_in_doubt_and_a_refusal_backs_off(tmp_path: Path) -> None:
    client = Recording()
    outcome = asyncio.run(_controller(tmp_path / "a", client, leader=False).reconcile((NS, NAME)))
    assert outcome.result is Result.CANCELED and client.writes == []
    refused = Recording(refuse=True)
    ctl = _controller(tmp_path / "b", refused)
    outcome = asyncio.run(ctl.reconcile((NS, NAME)))
    assert outcome.result is Result.ERROR and "409 Conflict" in outcome.message
    assert ctl.backoff.failures((NS, NAME)) == 1
