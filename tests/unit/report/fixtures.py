"""Shards as the status command sees them, built the way `gather` builds them (the MultigresShard and its
pods as the API server returns them, the data plane's answers as the adapter returns them), with no
I/O: healthy, draining (a scale-down), without a primary, and with a data plane that does not answer."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.dataplane.base import (
    Backup,
    Durability,
    Leadership,
    Pooler,
    PoolerId,
    PoolerStatus,
    Survey,
    SyncReplication,
)
from multigres_pools.report import plane_facts, shard_facts
from multigres_pools.report.model import Report
from multigres_pools.report.plane_facts import Answers

NOW = dt.datetime(2026, 11, 24, 4, 0, 0, tzinfo=dt.UTC)
BASE = "play-postgres-default-0-inf-pool-default-zone1-d6ea809b"
SERVICE_IDS = ("p-3be60fb5", "p-61e88a1e", "p-15e3954c", "p-7a0c2d19")
C = keys.ShardCondition


def stamp(ago: dt.timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def name(i: int) -> str:
    return f"{BASE}-{i}"


def pod(i: int, role: str = "REPLICA", *, ready: bool = True, annotations: dict[str, str] | None = None,
        restarts: int = 0, terminating: bool = False, fenced: bool = False) -> dict[str, Any]:
    args = ["--topo-global-server-addresses=play-etcd.play.svc:2379", "--topo-global-root=/multigres/global",
            "--cell=zone1", "--database=postgres", "--table-group=default", "--shard=0-inf",
            f"--service-id={SERVICE_IDS[i]}"]
    meta: dict[str, Any] = {
        "name": name(i), "namespace": "play", "creationTimestamp": stamp(dt.timedelta(hours=3, minutes=i)),
        "labels": {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL, keys.LABEL_APP_INSTANCE: "play",
                   keys.LABEL_POOL: "default", keys.LABEL_CELL: "zone1", keys.LABEL_INDEX: str(i),
                   keys.LABEL_ROLE: role},
        "annotations": annotations or {}}
    if terminating:
        meta["deletionTimestamp"] = stamp(dt.timedelta(seconds=20))
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    if fenced:
        conditions.append({"type": keys.POD_CONDITION_FENCED, "status": "True", "reason": "Fenced"})
    return {"metadata": meta,
            "spec": {"nodeName": "node-a" if i % 2 == 0 else "node-b",
                     "containers": [{"name": "multipooler", "args": args}]},
            "status": {"phase": "Running", "conditions": conditions,
                       "containerStatuses": [{"name": "multipooler", "restartCount": restarts}]}}


def conditions(**changed: tuple[str, str, str]) -> list[dict[str, Any]]:
    """All 18 conditions as a settled shard has them; `changed` = {type: (status, reason, message)}."""
    out = []
    for ctype in C:
        bad = keys.SHARD_CONDITION_ATTENTION.get(ctype)
        status, reason, message = "False" if bad == "True" else "True", "Fine", ""
        if ctype in (C.RECONCILING, C.ROLLING_UPDATE):
            status = "False"
        if ctype == C.READY:
            reason, message = "Healthy", "3/3 pods ready"
        status, reason, message = changed.get(ctype.value, (status, reason, message))
        out.append({"type": ctype.value, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": stamp(dt.timedelta(hours=2))})
    return out


def shard(phase: str = "Healthy", message: str = "3/3 pods ready", generation: int = 4,
          observed: int = 4, **changed: tuple[str, str, str]) -> dict[str, Any]:
    last = {"type": "full", "trigger": "schedule", "pod": name(1), "jobId": "j-7",
            "startedAt": "2026-11-24T01:00:02Z", "finishedAt": "2026-11-24T01:00:11Z",
            "backupId": "20261124-010003F", "sizeBytes": 24117248}
    return {
        "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
        "metadata": {"name": "play", "namespace": "play", "generation": generation},
        "spec": {"clusterName": "play", "multigres": {"version": "v0.1.0"},
                 "globalTopoServer": {"address": "play-etcd.play.svc:2379"},
                 "pools": {"default": {"cells": ["zone1"], "replicas": 3}}},
        "status": {"observedGeneration": observed, "phase": phase, "message": message,
                   "conditions": conditions(**changed), "lastBackupTime": "2026-11-24T01:00:11Z",
                   "lastBackupType": "full",
                   "backup": {"last": last, "schedule": {"full": "2026-11-23T01:00:00Z"}}},
    }


def pooler(i: int) -> Pooler:
    return Pooler(PoolerId("zone1", SERVICE_IDS[i]), keys.Role.REPLICA,
                  f"{name(i)}.{BASE}.play.svc.cluster.local", 15270, "postgres", "default", "0-inf", f"/k/{i}")


def address(i: int) -> str:
    return f"10.244.0.{11 + i}:15270"


def answers(n: int, primary: int | None, lsns: dict[int, str], *, standbys: tuple[int, ...] = (),
            connected: tuple[int, ...] = (), failed: dict[int, str] | None = None) -> Answers:
    """What the data plane answers for pods 0..n-1: `primary`'s leadership, each pod's position."""
    failed = failed or {}
    statuses = tuple(PoolerStatus(pooler(i).id, address(i), error=failed[i]) if i in failed
                     else PoolerStatus(pooler(i).id, address(i), primary=i == primary, lsn=lsns.get(i, ""))
                     for i in range(n))
    leader = pooler(primary) if primary is not None else None
    found = Answers(poolers=[pooler(i) for i in range(n)],
                    survey=Survey(Leadership(leader, leader.id if leader else PoolerId("zone1", SERVICE_IDS[0])),
                                  statuses))
    if leader is not None:
        ids = [pooler(i).id for i in standbys]
        found.sync = SyncReplication(True, tuple(ids), tuple(pooler(i).id for i in connected),
                                     cohort=(leader.id, *ids), leader=leader.id, durability=Durability(2))
        found.backups = [Backup("20261117-010002F", True, "full", "j-1", 22020096, "0/3000100"),
                         Backup("20261124-010003F", True, "full", "j-7", 24117248, "0/5000028")]
    return found


def build(cr: dict[str, Any], pods: list[dict[str, Any]], found: Answers, dial_pod_ips: bool = False) -> Report:
    report = shard_facts.report(cr, pods, NOW)
    plane_facts.merge(report, found, dial_pod_ips)
    return report


def healthy() -> Report:
    return build(shard(), [pod(0, "PRIMARY"), pod(1), pod(2)],
                 answers(3, 0, {0: "0/5000060", 1: "0/5000060", 2: "0/5000000"}, standbys=(1, 2),
                         connected=(1, 2)))


def draining() -> Report:
    """Scale-down 3 -> 2: the standby with the highest index leaves through its drain, already out of the
    synchronous set and still streaming."""
    drain = {keys.ANN_DRAIN_STATE: "draining", keys.ANN_DRAIN_REASON: "scale-down"}
    cr = shard("Progressing", f"drain {name(2)} (scale-down)", generation=5, observed=5,
               Ready=("False", "Progressing", "2/3 pods ready"),
               Available=("False", "NotAllPodsReady", "2/3 pods ready"),
               Reconciling=("True", "Progressing", f"drain {name(2)} (scale-down)"))
    return build(cr, [pod(0, "PRIMARY"), pod(1), pod(2, ready=False, annotations=drain)],
                 answers(3, 0, {0: "0/7000000", 1: "0/7000000", 2: "0/6FFFF00"}, standbys=(1,), connected=(1, 2)))


def no_primary() -> Report:
    """The primary's pooler does not answer and nobody else leads: failover has not happened (yet)."""
    refused = "UNAVAILABLE: failed to connect to all addresses; last error: connect: Connection refused"
    cr = shard("Progressing", "2/3 pods ready", Ready=("False", "Progressing", "2/3 pods ready"),
               PodsStuck=("True", "CrashLoopBackOff",
                          f"{name(0)}: container postgres waiting: CrashLoopBackOff (back-off 40s restarting "
                          "failed container)"))
    return build(cr, [pod(0, "PRIMARY", ready=False, restarts=4), pod(1), pod(2)],
                 answers(3, None, {1: "0/5000060", 2: "0/5000060"}, failed={0: refused}))


def unreachable() -> Report:
    """Run from outside the pod network: no pooler answers."""
    timeout = "DEADLINE_EXCEEDED: Deadline Exceeded"
    return build(shard(), [pod(0, "PRIMARY"), pod(1), pod(2)],
                 answers(3, None, {}, failed={0: timeout, 1: timeout, 2: timeout}), dial_pod_ips=True)
