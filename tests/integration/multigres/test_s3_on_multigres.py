"""An S3 backup repository on real Multigres v0.1.0 and pgBackRest (issue #25), against versitygw on
this machine (playground/s3server.py): a new shard bootstraps into the bucket (stanza, first backup,
WAL archive under `<keyPrefix>/multigres`), a requested backup lands there and the agent's health
check sees it, a restore drill restores it from the bucket into a throwaway pod and queries it, and
after total loss (every pool pod and data volume gone, the bucket kept) the shard
comes back from S3 with every row acknowledged before that backup. Then the same loss with the
bucket emptied: the bootstrap guard's repository check, which reads S3 with the pods' own
credentials, holds every new pod before PostgreSQL can initdb, says so on the MultigresShard, writes
nothing to the bucket, and lets the shard come back once the objects are.

The credentials reach pgBackRest through `credentialsSecret` alone (no `useEnvCredentials`): the
agent registers the repository with environment credentials whenever the Secret is named."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import bootstrap, facts

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.s3server import REGION, S3Server
from multigres_pools.playground.writeload import TABLE

from .faultrun import KUBELET_BACKOFF
from .safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    finished_backup,
    lose_every_pool_pod_and_volume,
    note,
    request_backup,
    restore_drill,
    rows_present,
    shard_condition,
    shard_cr,
    stop_restore_drills,
    watched_stack,
)

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]

REPLICAS = 2
BUCKET = "backups"
KEY_PREFIX = "play/orders"  # a prefix of the shard's own: v0.1.0 keeps one stanza per prefix
REPOSITORY = f"{KEY_PREFIX}/multigres"  # v0.1.0's repo1-path under the bucket
CREDENTIALS = "s3-credentials"
NEVER = "0 0 1 1 *"
FIELD_MANAGER = "s3-test"
RESTORED = "MonitorPostgres: successfully restored from backup"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory, toolchain: object) -> Iterator[tuple[Watched, S3Server]]:
    workdir = tmp_path_factory.mktemp("s3")
    servers: list[S3Server] = []

    def shard(stack: MultigresStack) -> dict[str, Any]:
        server = S3Server(workdir / "server", host=stack.host_ip, buckets=(BUCKET,))
        servers.append(server)
        server.start()
        kube = stack.kube()
        try:
            kube.apply({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": CREDENTIALS, "namespace": stack.namespace},
                        "stringData": {"AWS_ACCESS_KEY_ID": server.access_key,
                                       "AWS_SECRET_ACCESS_KEY": server.secret_key}}, FIELD_MANAGER, force=True)
        finally:
            kube.close()
        doc: dict[str, Any] = stack.sample_shard(replicas=REPLICAS, name=SHARD)
        doc["spec"]["backup"] = {
            "type": "s3", "schedules": {"full": NEVER, "differential": NEVER},
            "s3": {"bucket": BUCKET, "region": REGION, "endpoint": server.endpoint, "keyPrefix": KEY_PREFIX,
                   "credentialsSecret": CREDENTIALS}}
        return doc

    try:
        # The kubelet's crash-loop back-off of the fault runs (2-20 s): a held pod's check runs again soon.
        with watched_stack(workdir / "stack", shard, REPLICAS, agent_args=("--backup-interval", "3"),
                           kubelet_backoff=KUBELET_BACKOFF) as watched:
            yield watched, servers[0]
    finally:
        for server in servers:
            server.stop()


def _backup_labels(server: S3Server) -> set[str]:
    """The backups the repository holds: the label directories under backup/<stanza>/."""
    base = f"{REPOSITORY}/backup/multigres/"
    return {key[len(base):].split("/")[0] for key in server.objects(BUCKET)
            if key.startswith(base) and key[len(base):].count("/") >= 1 and "backup.history" not in key}


def test_a_new_shard_keeps_its_stanza_wal_and_backups_in_the_bucket(s3: tuple[Watched, S3Server]) -> None:
    watched, server = s3
    stack = watched.stack
    objects = server.objects(BUCKET)
    note("objects in the bucket after the bootstrap", {"count": len(objects), "first": objects[:8]})
    assert all(key.startswith(f"{REPOSITORY}/") for key in objects), objects
    assert f"{REPOSITORY}/backup/multigres/backup.info" in objects
    assert f"{REPOSITORY}/archive/multigres/archive.info" in objects
    first = _backup_labels(server)
    assert len(first) == 1 and next(iter(first)).endswith("F"), first  # v0.1.0's own first (full) backup

    watched.load.wait_for_acks(20, timeout=120)
    request_backup(stack, "full", FIELD_MANAGER)
    last: dict[str, Any] = wait_for(lambda: finished_backup(stack, "request"), 240, "the requested backup", interval=1)
    note("requested backup", last)
    assert not last.get("error") and last["backupId"] in _backup_labels(server), (last, _backup_labels(server))

    def seen_by_agent() -> bool:
        health = facts.json_annotation(shard_cr(stack), keys.ANN_BACKUP_HEALTH) or {}
        return health.get("lastBackupId") == last["backupId"]

    wait_for(seen_by_agent, 60, "the agent's health check to list the backup from S3", interval=1)
    assert (shard_cr(stack).get("status") or {}).get("lastBackupTime")


def test_a_restore_drill_reads_the_bucket_and_writes_nothing_there(s3: tuple[Watched, S3Server]) -> None:
    watched, server = s3
    stack = watched.stack
    rows, backup = _take_backup(watched, server)
    ids = ",".join(map(str, rows[-100:]))
    query = f"SELECT 1 / (count(*) = {len(rows[-100:])})::int FROM {TABLE} WHERE id IN ({ids})"
    backups_before = {key for key in server.objects(BUCKET) if key.startswith(f"{REPOSITORY}/backup/")}

    def seen_by_agent() -> bool:
        health = facts.json_annotation(shard_cr(stack), keys.ANN_BACKUP_HEALTH) or {}
        return health.get("lastBackupId") == backup["backupId"]

    wait_for(seen_by_agent, 60, "the agent's health check to list the backup", interval=1)
    last = restore_drill(stack, {"query": query}, backup["finishedAt"], FIELD_MANAGER)
    note("restore drill from S3", last)
    assert (last["result"], last["reason"], last["backupId"]) == ("Verified", "Verified", backup["backupId"]), last
    # Read-only: the backups in the bucket are as they were (the primary's archiver adds WAL meanwhile).
    assert {key for key in server.objects(BUCKET) if key.startswith(f"{REPOSITORY}/backup/")} == backups_before
    stop_restore_drills(stack, FIELD_MANAGER)


def _take_backup(watched: Watched, server: S3Server) -> tuple[list[int], dict[str, Any]]:
    """The rows acknowledged so far (those the primary holds), and a full backup taken after them."""
    stack = watched.stack
    watched.load.wait_for_acks(50, timeout=120)
    acked = list(watched.load.acked)
    rows = sorted(rows_present(watched, acked))
    previous = ((shard_cr(stack).get("status") or {}).get("backup") or {}).get("last", {}).get("startedAt", "")
    request_backup(stack, "full", FIELD_MANAGER)
    backup: dict[str, Any] = wait_for(lambda: finished_backup(stack, "request", previous), 240,
                                      "the requested backup", interval=1)
    assert not backup.get("error") and backup["backupId"] in _backup_labels(server), backup
    watched.load.wait_for_acks(50, timeout=120)
    return rows, backup


def test_total_loss_comes_back_from_the_bucket(s3: tuple[Watched, S3Server]) -> None:
    watched, server = s3
    stack = watched.stack
    before_backup, backup = _take_backup(watched, server)

    lost_at = time.monotonic()
    gone_at = lose_every_pool_pod_and_volume(watched, REPLICAS)
    stack.wait_serving(SHARD, replicas=REPLICAS, timeout=300)
    watched.load.wait_for_acks(20, timeout=120)
    assert stack.kubelet is not None
    restored = {}
    for pod in stack.pods():
        # The bootstrap guard read the bucket first (the shard recorded backups) and let the restore start.
        check = stack.kubelet.logs(stack.namespace, facts.name(pod), keys.REPOSITORY_CHECK_CONTAINER)
        assert "the repository holds a backup to restore" in check, check
        log = stack.kubelet.logs(stack.namespace, facts.name(pod), "multipooler")
        line = next((line for line in log.splitlines() if RESTORED in line), None)
        restored[facts.name(pod)] = json.loads(line).get("backup_id") if line else None
    missing = sorted(set(before_backup) - rows_present(watched, before_backup))
    note("total loss with an S3 repository", {
        "backup": backup["backupId"], "restored by pod": restored,
        "acknowledged before the backup": len(before_backup), "missing": len(missing),
        "seconds, loss to serving again": round(time.monotonic() - lost_at, 1),
        "seconds, everything gone to serving again": round(time.monotonic() - gone_at, 1)})
    assert set(restored.values()) == {backup["backupId"]}, restored
    assert not missing, missing[:20]


def test_total_loss_with_the_bucket_emptied_is_held_until_the_objects_are_back(s3: tuple[Watched, S3Server]) -> None:
    watched, server = s3
    stack = watched.stack
    before_backup, backup = _take_backup(watched, server)
    assert bootstrap.recorded_backup(shard_cr(stack), None), "no recorded backup: the guard would let it initdb"
    prefix = server.root / BUCKET / KEY_PREFIX.split("/")[0]
    aside = server.workdir / "aside"

    def empty_the_bucket() -> None:
        shutil.move(prefix, aside)

    lose_every_pool_pod_and_volume(watched, REPLICAS, empty_the_bucket)

    def refused() -> dict[str, Any] | None:
        cond = shard_condition(watched, keys.ShardCondition.BOOTSTRAP_REFUSED)
        pods = stack.pods()
        held = cond.get("status") == "True" and all(facts.name(p) in cond.get("message", "") for p in pods)
        return cond if held and len(pods) == REPLICAS else None

    cond: dict[str, Any] = wait_for(refused, 240, "BootstrapRefused naming every pool pod", interval=1)
    note("emptied bucket refused", {"reason": cond["reason"], "message": cond["message"][:400]})
    assert cond["reason"] == bootstrap.REASON_NO_BACKUP, cond
    assert f"s3://{BUCKET}/{REPOSITORY}" in cond["message"], cond
    # Held: nothing started and nothing was written to the bucket.
    assert server.objects(BUCKET) == [], server.objects(BUCKET)[:10]
    assert stack.kubelet is not None
    for pod in stack.pods():
        assert not facts.condition_true(pod, "Ready")
        with pytest.raises(FileNotFoundError):  # multipooler never started, so no initdb
            stack.kubelet.logs(stack.namespace, facts.name(pod), "multipooler")

    shutil.move(aside, prefix)  # the objects back: the next retry of the check lets the restore start
    stack.wait_serving(SHARD, replicas=REPLICAS, timeout=600)
    watched.load.wait_for_acks(20, timeout=120)
    wait_for(lambda: shard_condition(watched, keys.ShardCondition.BOOTSTRAP_REFUSED).get("status") == "False",
             60, "BootstrapRefused to clear", interval=1)
    missing = sorted(set(before_backup) - rows_present(watched, before_backup))
    note("bucket back", {"backup": backup["backupId"], "acknowledged before it": len(before_backup),
                         "missing": len(missing)})
    assert not missing, missing[:20]
