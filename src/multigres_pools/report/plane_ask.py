"""Asks the data plane what the agent would see, with the adapter the shard declares: the topology's
pooler records, one round of status calls (the leader, WAL positions), the primary's synchronous
replication and its backups. Every failure is kept as an answer, never raised."""

from __future__ import annotations

from collections.abc import Callable

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader

from .. import dataplane
from ..agent import podinfo
from ..dataplane.base import DataPlaneError
from .plane_facts import Answers

BACKUPS_LISTED = 100  # era A returns the oldest first and `limit` keeps the oldest: ask for enough


def ask(cr: Manifest, pods: list[Manifest], dial_host: Callable[[str], str] | None, rpc_timeout: float) -> Answers:
    version = ShardReader.of(cr).multigres_version or keys.DEFAULT_MULTIGRES_VERSION
    tops = [t for t in (podinfo.pod_topology(p) for p in pods) if t]
    topo = podinfo.cr_topology(cr) or (podinfo.shard_topology(tops) if tops else None)
    if topo is None:
        return Answers(error="no topology address in the spec and no pool pod to read it from")
    try:
        plane = dataplane.for_version(version, rpc_timeout=rpc_timeout, dial_host=dial_host)
    except ValueError as exc:
        return Answers(error=str(exc))
    answers = Answers()
    try:
        answers.poolers = plane.list_poolers(topo)
        answers.survey = plane.survey(answers.poolers)
        leader = answers.survey.leadership.confirmed
        if leader is None:
            return answers
        try:
            answers.sync = plane.sync_replication(leader)
        except DataPlaneError as exc:
            answers.sync_error = exc.message
        try:
            answers.backups = plane.get_backups(leader, BACKUPS_LISTED)
        except DataPlaneError as exc:
            answers.backups_error = exc.message
    except DataPlaneError as exc:
        answers.error = exc.message
    finally:
        plane.close()
    return answers
