"""The restore in the status: v0.1.0's postgres_action read from the Status round, the agent's fact on
each pool pod (restore_watch.next_fact), and the engine's condition Restoring and status.restore
built from the pods' facts (state/bootstrap.py)."""

from __future__ import annotations

import json

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import bootstrap

from multigres_pools.agent.restore_watch import next_fact
from multigres_pools.dataplane.base import PoolerId, PostgresAction
from multigres_pools.dataplane.v0_1 import pick_leadership
from multigres_pools.proto.gen.v0_1 import multipoolermanagerdata_pb2 as mpd

from .test_leadership_v01 import answer, pooler

S = keys.RestoreState
T0, T1 = "2026-11-27T10:00:00Z", "2026-11-27T10:00:09Z"
BACKUP = "20261127-095900F"


def test_the_status_round_says_who_restores_and_where_each_replays() -> None:
    restoring, first, idle = answer("a", 0, 0, "a"), answer("b", 0, 0, "b"), answer("c", 3, 1, "c")
    restoring.status.postgres_action = mpd.POSTGRES_ACTION_RESTORING_FROM_BACKUP
    first.status.postgres_action = mpd.POSTGRES_ACTION_CREATING_FIRST_BACKUP
    idle.status.postgres_action = mpd.POSTGRES_ACTION_STARTING  # not reported: no restore
    idle.status.replication_status.last_replay_lsn = "0/15000000"
    got = pick_leadership([(pooler("a"), restoring), (pooler("b"), first), (pooler("c"), idle)])
    assert dict(got.actions) == {PoolerId("zone1", "a"): PostgresAction.RESTORING,
                                 PoolerId("zone1", "b"): PostgresAction.FIRST_BACKUP}
    assert dict(got.positions) == {PoolerId("zone1", "c"): "0/15000000"}


def test_a_restore_is_recorded_when_it_starts_and_completed_once_postgres_runs() -> None:
    started = next_fact(None, PostgresAction.RESTORING, False, T0, BACKUP, None)
    assert started == {"state": S.RESTORING, "startedAt": T0}
    assert next_fact(started, PostgresAction.RESTORING, False, T1, BACKUP, None) is None  # unchanged
    assert next_fact(started, None, False, T1, BACKUP, None) is None  # no answer, or postgres not up yet
    done = next_fact(started, None, True, T1, BACKUP, "0/15000000")
    assert done == {"state": S.RESTORED, "startedAt": T0, "finishedAt": T1, "backupId": BACKUP,
                    "walPosition": "0/15000000"}
    assert next_fact(done, None, True, T1, BACKUP, "0/16000000") is None  # a finished story stays as it is


def test_a_first_backup_is_an_initialisation_not_a_restore_and_a_pod_that_never_restored_has_no_fact() -> None:
    first = next_fact(None, PostgresAction.FIRST_BACKUP, False, T0, None, None)
    done = next_fact(first, None, True, T1, BACKUP, "0/3000000")
    assert done is not None and done["state"] == S.INITIALIZED and "backupId" not in done
    assert next_fact(None, None, True, T1, BACKUP, "0/3000000") is None


def _pod(name: str, fact: dict | None) -> dict:
    annotations = {keys.ANN_RESTORE: json.dumps(fact)} if fact else {}
    return {"metadata": {"name": name, "annotations": annotations}, "status": {}}


def test_the_shard_shows_the_restore_while_it_runs_and_what_was_restored_after() -> None:
    pods = [_pod("p-0", {"state": S.RESTORING, "startedAt": T0}),
            _pod("p-1", {"state": S.RESTORED, "startedAt": T0, "finishedAt": T1, "backupId": BACKUP,
                         "walPosition": "0/9000000"}),
            _pod("p-2", None)]
    cond = bootstrap.restoring_condition(pods)
    assert (cond["status"], cond["reason"]) == ("True", "RestoringFromBackup")
    assert cond["message"].startswith("p-0: restoring the newest complete backup") and T0 in cond["message"]
    assert bootstrap.restore_status(pods) == {"restore": {"state": "Restoring", "pods": ["p-0"], "startedAt": T0}}
    pods[0] = _pod("p-0", {"state": S.RESTORED, "startedAt": T0, "finishedAt": "2026-11-27T10:00:12Z",
                           "backupId": BACKUP, "walPosition": "0/15000000"})
    assert bootstrap.restoring_condition(pods)["status"] == "False"
    assert bootstrap.restore_status(pods) == {"restore": {
        "state": "Restored", "pods": ["p-0", "p-1"], "startedAt": T0, "finishedAt": "2026-11-27T10:00:12Z",
        "backupId": BACKUP, "walPosition": "0/15000000"}}  # 0/15000000 > 0/9000000 as an LSN, not as text


def test_a_first_backup_shows_as_such_and_no_restore_is_reported() -> None:
    pods = [_pod("p-0", {"state": S.FIRST_BACKUP, "startedAt": T0}), _pod("p-1", {"state": S.INITIALIZED})]
    cond = bootstrap.restoring_condition(pods)
    assert cond["reason"] == "CreatingFirstBackup" and "a new, empty shard" in cond["message"]
    assert bootstrap.restore_status(pods) == {}


class _Kube:
    def __init__(self) -> None:
        self.patches: list[dict] = []
        self.events: list[str] = []

    def patch_pod_meta(self, pod: dict, annotations: dict) -> dict:
        self.patches.append(annotations)
        return pod

    def event(self, target: dict, reason: str, message: str, warning: bool = False) -> None:
        self.events.append(reason)


def test_a_pod_listed_before_the_agents_own_write_does_not_restart_the_story() -> None:
    """The pods of a pass can predate what the previous pass wrote: one RestoreStarted per restore."""
    import logging
    from types import SimpleNamespace

    from multigres_pools.agent.restore_watch import publish_restores
    from multigres_pools.dataplane.base import Leadership

    a = PoolerId("zone1", "a")
    pod = {"metadata": {"name": "p-0", "uid": "u-0", "annotations": {}}, "status": {}}
    kube = _Kube()
    ctx = SimpleNamespace(kube=kube, clock=lambda: 1795773600.0, effect=lambda name: None, restores={},
                          log=logging.getLogger("test"))
    restoring = Leadership(None, None, actions={a: PostgresAction.RESTORING})
    done = Leadership(None, None, in_recovery=frozenset({a}), positions={a: "0/9000000"})

    def view(round_: Leadership) -> SimpleNamespace:
        return SimpleNamespace(asked_pods=lambda: [(pod, a, "u-0", round_)], shard=None,
                               event_targets=lambda p: [p])

    assert publish_restores(ctx, view(restoring)) == 1  # type: ignore[arg-type]
    assert publish_restores(ctx, view(restoring)) == 0  # type: ignore[arg-type]  # the same stale pod
    assert publish_restores(ctx, view(done)) == 1  # type: ignore[arg-type]
    assert publish_restores(ctx, view(done)) == 0  # type: ignore[arg-type]
    assert kube.events == ["RestoreStarted", "RestoreCompleted"]
    assert json.loads(kube.patches[-1][keys.ANN_RESTORE])["walPosition"] == "0/9000000"
