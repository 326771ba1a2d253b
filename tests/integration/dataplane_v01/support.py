"""Helpers of the v0.1.0 tests: reading the cohort, properties over time, and a healthy shard."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from multigres_pools.dataplane.base import DataPlaneError, Eligibility, Pooler
from multigres_pools.dataplane.etcd import Etcd
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.provisioned import CELLS, ProvisionedShard
from tests.helpers.polling import eventually


def note(what: str, seconds: float) -> None:
    print(f"[measured] {what}: {seconds:.2f} s", flush=True)


def leader(dp: V0_1, shard: ProvisionedShard) -> Pooler:
    return eventually(lambda: dp.leader(dp.list_poolers(shard.topology())), timeout=120, what="a confirmed leader")


def replicas(dp: V0_1, shard: ProvisionedShard, primary: Pooler) -> list[Pooler]:
    return sorted((p for p in dp.list_poolers(shard.topology()) if p.id != primary.id), key=lambda p: p.id.cell)


def listed(dp: V0_1, primary: Pooler, pooler: Pooler) -> bool:
    return dp.sync_replication(primary).lists(pooler.id)


def stays(check: Callable[[], bool], seconds: float, what: str, interval: float = 0.3) -> None:
    """`check` holds on every poll for `seconds` (a property over time, not a timing assertion)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert check(), what
        time.sleep(interval)


def timed(check: Callable[[], object], timeout: float, what: str) -> float:
    start = time.monotonic()
    eventually(check, timeout=timeout, what=what, interval=0.05)
    return time.monotonic() - start


def _eligibility(dp: V0_1, pooler: Pooler) -> Eligibility | None:
    try:
        return dp.standby_state(pooler).eligibility
    except DataPlaneError:
        return None


def make_healthy(shard: ProvisionedShard, dp: V0_1) -> Pooler:
    """Undo what earlier tests left: every pooler runs, is ELIGIBLE and has its record, every standby
    replicates, and the cohort holds all three, stable over 3 s. Returns the leader."""
    if any(shard.pooler_pid(cell) is None for cell in CELLS):
        shard.restart_missing()
    primary = leader(dp, shard)
    etcd = Etcd(shard.etcd_endpoint)
    for cell in CELLS:
        pooler = shard.pooler(cell)
        if pooler.id == primary.id:
            continue
        state = eventually(lambda p=pooler: _eligibility(dp, p), timeout=120, what=f"{pooler.id} answering Status")
        print(f"[healthy] {pooler.id}: {state}, record {etcd.get(pooler.key) is not None}", flush=True)
        if state is Eligibility.INELIGIBLE:
            dp.make_eligible(pooler)
        if etcd.get(pooler.key) is None:
            # Only a start registers a pooler; ELIGIBLE first, so no multiorch keeps a stale INELIGIBLE.
            eventually(lambda p=pooler: listed(dp, primary, p), timeout=120, what=f"{pooler.id} back in the cohort")
            shard.signal_pooler(cell, signal.SIGKILL)
            shard.wait_pooler_gone(cell)
            shard.restart_missing()

    seen: list[str] = []

    def full() -> bool:
        # In the cohort is not yet streaming: a standby made ELIGIBLE again by the test before is added
        # back before multiorch has set its primary_conninfo, so each standby's own word counts too.
        try:
            primary = leader(dp, shard)
            cohort, records = dp.sync_replication(primary).cohort, dp.list_poolers(shard.topology())
            streaming = [p.id.cell for p in records if p.id != primary.id and dp.standby_state(p).replicating]
            now = (f"cohort {sorted(c.cell for c in cohort)}, records {sorted(p.id.cell for p in records)}, "
                   f"standbys replicating {sorted(streaming)}")
        except DataPlaneError as exc:
            cohort, records, streaming, now = (), [], [], f"not yet: {exc}"
        if not seen or seen[-1] != now:  # a trace for a failure report, without flooding it
            seen.append(now)
            print(f"[healthy] {now}", flush=True)
        return len(cohort) == len(CELLS) and len(records) == len(CELLS) and len(streaming) == len(CELLS) - 1

    # A restarted pooler can flap in and out for a while (stale health in one multiorch): wait it out.
    eventually(lambda: full() and (time.sleep(3) or full()), timeout=240, what="a stable cohort of three")
    return leader(dp, shard)
