"""How long a restore drill takes for a few database sizes, on real Multigres v0.1.0 (issue #25).

    python -m bench.restore_drill [--sizes 100,1000]

One shard of two pods (a primary and its synchronous standby: v0.1.0 elects no primary for one pod
under its default durability policy, AT_LEAST_2). For each size (MiB of table data, cumulative) the
bench writes rows until the database holds that much, takes a full backup on request and runs a
restore drill on request
(spec.backup.verify, docs/operations.md "Restore drill"): pgBackRest restores the backup into the
drill pod, PostgreSQL starts in recovery and `SELECT count(*)` over the table must answer. The drill's
time is its pod's life (created by the engine, ended by the container: the restore plus a start and a
query), the restore part of a total loss's RTO.

The anchor, measured in the same run on the same data: the full backup itself (pgBackRest reading and
compressing what the drill decompresses and writes back), so the ratio says how a restore compares
with the backup a user already waits for every week.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import psycopg
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from bench.context import print_context, scratch
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

SHARD = "play"
REPLICAS = 2
NEVER = "0 0 1 1 *"
TABLE = "bench_drill"
ROW_BYTES = 1024
# One row's payload: 32 digests of random numbers, which no compression shrinks (a repeated digest
# would compress to almost nothing and make pgBackRest look fast).
PAYLOAD = " || ".join(["md5(random()::text)"] * (ROW_BYTES // 32))
BATCH = 20_000


def _backup(stack: MultigresStack) -> dict[str, Any]:
    """status.backup of the shard (the agent's backups and the engine's drills)."""
    kube = stack.kube()
    try:
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD) or {}
    finally:
        kube.close()
    return dict(((cr.get("status") or {}).get("backup")) or {})


def _annotate(stack: MultigresStack, body: dict[str, Any]) -> None:
    kube = stack.kube()
    try:
        kube.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD, body,
                         field_manager="bench-restore-drill")
    finally:
        kube.close()


def _fill(stack: MultigresStack, mib: int) -> int:
    """Rows until the table holds `mib` MiB; the database's size in bytes."""
    primary = stack.primary_ip(SHARD)
    assert primary is not None
    with psycopg.connect(stack.dsn(primary, SHARD), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigint PRIMARY KEY, payload text)")
        while True:
            row = conn.execute(f"SELECT pg_table_size('{TABLE}'), coalesce(max(id), 0) FROM {TABLE}").fetchone()
            assert row is not None
            size, last = int(row[0]), int(row[1])
            if size >= mib * 1024 * 1024:
                break
            conn.execute(f"INSERT INTO {TABLE} SELECT g, {PAYLOAD} FROM generate_series({last + 1}, {last + BATCH}) g")
        done = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        assert done is not None
        return int(done[0])


def _full_backup(stack: MultigresStack) -> dict[str, Any]:
    before = str((_backup(stack).get("last") or {}).get("startedAt", ""))
    _annotate(stack, {"metadata": {"annotations": {keys.ANN_BACKUP_REQUEST: "full"}}})

    def done() -> dict[str, Any] | None:
        last = _backup(stack).get("last") or {}
        return last if last.get("finishedAt") and str(last.get("startedAt", "")) > before else None

    last: dict[str, Any] = wait_for(done, 1800, "the full backup", interval=1)
    if last.get("error"):
        raise SystemExit(f"bench.restore_drill: the backup failed: {last['error']}")
    return last


def _drill(stack: MultigresStack, since: str) -> dict[str, Any]:
    _annotate(stack, {"spec": {"backup": {"verify": {"query": f"SELECT count(*) FROM {TABLE}", "timeout": "2h"}}},
                      "metadata": {"annotations": {keys.ANN_RESTORE_DRILL_REQUEST: "bench"}}})

    def ended() -> dict[str, Any] | None:
        last = (_backup(stack).get("drill") or {}).get("last") or {}
        return last if str(last.get("finishedAt", "")) > since else None

    last: dict[str, Any] = wait_for(ended, 7200, "the restore drill", interval=1)
    if last.get("result") != "Verified":
        raise SystemExit(f"bench.restore_drill: the drill did not pass: {last}")
    return last


def _seconds(run: dict[str, Any]) -> float:
    start, end = facts.parse_time(run.get("startedAt")), facts.parse_time(run.get("finishedAt"))
    assert start is not None and end is not None, run
    return (end - start).total_seconds()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100,1000", help="MiB of table data to reach, in order (default 100,1000)")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if os.geteuid() != 0:
        raise SystemExit("bench.restore_drill: run as root (pods get network namespaces)")
    started = time.monotonic()
    with scratch("mgp-bench-restore-drill-") as workdir:
        stack = MultigresStack(workdir, progress=lambda _line: None)
        rows: list[tuple[int, float, float, float, int]] = []
        try:
            stack.start()
            shard = stack.sample_shard(replicas=REPLICAS, name=SHARD)
            shard["spec"]["backup"]["schedules"] = {"full": NEVER, "differential": NEVER}
            stack.apply_shard(shard)
            stack.wait_serving(SHARD, replicas=REPLICAS, timeout=900)
            for mib in sizes:
                db_bytes = _fill(stack, mib)
                backup = _full_backup(stack)
                drill = _drill(stack, str(backup["finishedAt"]))
                size = int(backup.get("sizeBytes") or 0)
                rows.append((mib, db_bytes / 2**20, _seconds(backup), _seconds(drill), size))
        finally:
            stack.stop()
    print_context()
    print(f"restore drills on Multigres v0.1.0, {REPLICAS} pods, full backups taken on the standby "
          f"(whole run {time.monotonic() - started:.0f} s)")
    print(f"{'table MiB':>9}  {'database MiB':>12}  {'backup s (anchor)':>17}  {'drill s':>7}  {'ratio':>5}  "
          f"{'backup MiB':>10}  {'drill MiB/s':>11}")
    for mib, db_mib, backup_s, drill_s, size in rows:
        print(f"{mib:>9}  {db_mib:>12.0f}  {backup_s:>17.0f}  {drill_s:>7.0f}  {drill_s / max(backup_s, 1):>5.2f}  "
              f"{size / 2**20:>10.1f}  {db_mib / max(drill_s, 1):>11.1f}")


if __name__ == "__main__":
    main()
