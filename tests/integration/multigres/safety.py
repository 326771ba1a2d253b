"""What the data-safety tests on the real Multigres stack share: the stack with a write load, a
synchronous-set sampler and a pod timeline running beside it, spec changes, and the claims every
drain is judged by (nothing acknowledged is lost; no pod deleted while PostgreSQL still waited for
it; one PRIMARY label at most)."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import resource_path
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.dataplane.base import ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.history import History
from multigres_pools.playground.localstack import PodEvent, PodTimeline, wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.process_kubelet import DEFAULT_BACKOFF
from multigres_pools.playground.writeload import TABLE, RecoverySampler, SyncSample, SyncSampler, WriteLoad

SHARD = "play"
# Per test, the module's stack start included (pytest-timeout counts fixture set-up): a 5-pod shard
# and its drains take 10-20 minutes when other suites share the two cores.
STACK_TIMEOUT = pytest.mark.timeout(1800)
DRAIN_EFFECTS_V01 = ("write:draining", "write:made-ineligible", "make-ineligible", "remove-standby",
                     "write:acknowledged", "unregister", "write:ready-for-deletion")


def last_good(fetch: Callable[[], str | None]) -> Callable[[], str | None]:
    """`fetch`, answering with its last result while it raises (the API server is down, say): the load
    and the sampler keep working against the address they knew instead of dying with the request."""
    known: list[str | None] = [None]

    def call() -> str | None:
        with contextlib.suppress(Exception):
            known[0] = fetch()
        return known[0]

    return call


def throttled(fetch: Callable[[], str | None], seconds: float = 0.25) -> Callable[[], str | None]:
    """`fetch`, asked at most once per `seconds`: the write load asks where the primary is before every
    write (100 a second), and each ask was a LIST of pods, the API server's busiest request in a stack
    module. A failover breaks the load's connection first, and its retry waits 0.2 s anyway."""
    known: list[str | None] = [None]
    asked = [float("-inf")]
    lock = threading.Lock()

    def call() -> str | None:
        with lock:
            if time.monotonic() - asked[0] >= seconds:
                known[0], asked[0] = fetch(), time.monotonic()
            return known[0]

    return call


class Watched:
    """The stack with everything a data-safety claim is judged by running beside it. The write load
    goes to the primary's PostgreSQL, or with `through_gateway` through the multigateway (a client's
    path: the gateway routes to whichever pooler is the primary)."""

    def __init__(self, stack: MultigresStack, through_gateway: bool = False, history: History | None = None) -> None:
        self.stack = stack
        password = stack.password(SHARD)
        primary = throttled(last_good(stack.primary_ip))
        self.timeline = PodTimeline(stack.kubeconfig, stack.namespace, cluster=SHARD)  # clusterName = name
        self.load = WriteLoad(find_primary=throttled(last_good(stack.gateway_ip)) if through_gateway else primary,
                              dsn=stack.gateway_dsn(SHARD) if through_gateway
                              else lambda host: stack.dsn(host, password=password), interval=0.01,
                              history=history)
        self.sync = SyncSampler(find_primary=primary, dsn=lambda host: stack.dsn(host, password=password))
        self.recovery = RecoverySampler(pods=stack.pool_addresses,
                                        dsn=lambda host: stack.dsn(host, password=password))

    def start(self) -> None:
        for thread in (self.timeline, self.load, self.sync, self.recovery):
            thread.start()
        self.load.wait_for_acks(50, timeout=120)

    def stop(self) -> None:
        for thread in (self.load, self.sync, self.recovery, self.timeline):
            if thread.is_alive():
                thread.stop()


def assert_never_two_writable(watched: Watched) -> None:
    """Issue #24's claim, sampled at 5 Hz on every pod: never two PostgreSQL servers out of recovery."""
    samples = watched.recovery.samples
    assert samples and any(s.writable for s in samples), "the recovery sampler saw no primary at all"
    both = watched.recovery.two_writable()
    assert both == [], (f"{len(both)} of {len(samples)} samples saw two writable servers, first at "
                        f"{both[0].at:.1f}: {both[0].writable}")


@contextmanager
def watched_stack(workdir: Path, shard: dict[str, Any] | Callable[[MultigresStack], dict[str, Any]],
                  replicas: int, through_gateway: bool = False, agent_args: tuple[str, ...] = (),
                  node: str = "process", history: History | None = None,
                  sized_claims: bool = False, kubelet_backoff: tuple[float, float] = DEFAULT_BACKOFF
                  ) -> Iterator[Watched]:
    """A started stack serving `shard` (a manifest, or a function of the stack giving one) with
    `replicas` pool pods, under the write load (see Watched; with `history`, it records every write
    there); everything stops on exit. `node`: MultigresStack.node ("real": containers on a real kubelet);
    `sized_claims`: MultigresStack.sized_claims (volumes that can fill up); `kubelet_backoff`: its crash-loop delay."""
    stack = MultigresStack(workdir, progress=lambda line: print(line, flush=True), agent_args=agent_args, node=node,
                           sized_claims=sized_claims, kubelet_backoff=kubelet_backoff)
    watched = None
    try:
        stack.start()
        stack.apply_shard(shard(stack) if callable(shard) else shard)
        stack.wait_serving(SHARD, replicas=replicas, timeout=600)
        if through_gateway:
            wait_for(stack.gateway_ip, 300, "a Ready multigateway", interval=1)
        watched = Watched(stack, through_gateway, history)
        watched.start()
        yield watched
    finally:
        if watched is not None:
            watched.stop()
        stack.stop()


def lose_every_pool_pod_and_volume(watched: Watched, replicas: int,
                                   meanwhile: Callable[[], None] | None = None) -> float:
    """Total loss: every pool pod (deleted with no grace, as a lost node) and every data PVC, its
    volume's data too; the backup repository stays. The operator is stopped meanwhile so that it
    recreates nothing from a half-deleted state; the agent runs on (it unregisters each deleted pod's
    pooler). `meanwhile` runs once everything is gone, before the operator starts again. Returns when
    (monotonic) the last pod and claim were gone."""
    stack = watched.stack
    assert stack.operator is not None and stack.kubelet is not None
    stack.operator.kill()
    kube = stack.kube()
    try:
        every = [facts.name(c) for c in kube.list("v1", "PersistentVolumeClaim", stack.namespace)]
        claims = [c for c in every if c.startswith("data-")]
        assert len(claims) == replicas, claims
        for claim in claims:
            kube.delete("v1", "PersistentVolumeClaim", stack.namespace, claim)
        for pod in stack.pods():
            kube.request("delete", "DELETE", resource_path("v1", "Pod", stack.namespace, facts.name(pod)),
                         body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        wait_for(lambda: not stack.pods(), 120, "every pool pod to go", interval=0.5)
        wait_for(lambda: not [c for c in kube.list("v1", "PersistentVolumeClaim", stack.namespace)
                              if facts.name(c) in claims], 120, "every data PVC to go", interval=0.5)
        gone = time.monotonic()
    finally:
        kube.close()
    for claim in claims:  # the process kubelet keeps a claim's directory; a lost volume does not
        shutil.rmtree(stack.kubelet.pvc_path(stack.namespace, claim))
    if meanwhile is not None:
        meanwhile()
    stack.operator.start()
    return gone


# --- changing the shard -----------------------------------------------------------------------------
def shard_cr(stack: MultigresStack, name: str = SHARD) -> dict[str, Any]:
    """The MultigresShard as the API server has it now."""
    kube = stack.kube()
    try:
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, name)
    finally:
        kube.close()
    assert cr is not None
    return cr


def rows_present(watched: Watched, ids: list[int]) -> set[int]:
    """Which of the write load's rows `ids` the shard's primary holds now."""
    stack = watched.stack
    primary = stack.primary_ip(SHARD)
    assert primary is not None
    with psycopg.connect(stack.dsn(primary, password=stack.password(SHARD)), connect_timeout=5) as conn:
        return {i for (i,) in conn.execute(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)", (ids,)).fetchall()}


def shard_condition(watched: Watched, ctype: str) -> dict[str, Any]:
    """The MultigresShard's condition `ctype` now ({} when it has none)."""
    return facts.condition(shard_cr(watched.stack), ctype) or {}


def shard_events(stack: MultigresStack, reason: str, shard: str = SHARD) -> list[dict[str, Any]]:
    """The events of `reason` about the MultigresShard `shard`."""
    kube = stack.kube()
    try:
        found = kube.list("v1", "Event", stack.namespace)
    finally:
        kube.close()
    return [e for e in found if (e.get("involvedObject") or {}).get("name") == shard and e.get("reason") == reason]


def backup_state(stack: MultigresStack) -> dict[str, Any]:
    """The agent's backup state on the shard (keys.ANN_BACKUP_STATE): `running` while one runs."""
    raw = facts.annotations(shard_cr(stack)).get(keys.ANN_BACKUP_STATE)
    return json.loads(raw) if raw else {}


def finished_backup(stack: MultigresStack, trigger: str, after: str = "") -> dict[str, Any] | None:
    """status.backup.last (the operator's copy) once a backup of `trigger` started after `after` ended."""
    last = ((shard_cr(stack).get("status") or {}).get("backup") or {}).get("last") or {}
    return last if last.get("trigger") == trigger and last.get("finishedAt") and last["startedAt"] > after else None


def patch_shard(stack: MultigresStack, body: dict[str, Any], field_manager: str = "safety-test",
                name: str = SHARD) -> None:
    """A merge patch of the MultigresShard, as a user's `kubectl patch --type merge`."""
    kube = stack.kube()
    try:
        kube.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, name, body,
                         field_manager=field_manager)
    finally:
        kube.close()


def request_backup(stack: MultigresStack, kind: str, field_manager: str = "safety-test", name: str = SHARD) -> None:
    """What a user writes for an on-demand backup (keys.ANN_BACKUP_REQUEST on the MultigresShard)."""
    patch_shard(stack, {"metadata": {"annotations": {keys.ANN_BACKUP_REQUEST: kind}}}, field_manager, name)


def switch_and_archive(stack: MultigresStack, primary: str | None, password: str) -> str:
    """Close the current WAL segment on the primary at `primary` and wait until PostgreSQL archived it:
    every write acknowledged before this call is then in the repository. Returns the segment's name."""
    assert primary is not None, "no primary"
    with psycopg.connect(stack.dsn(primary, password=password), connect_timeout=5, autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
        assert row is not None
        segment = str(row[0])

        def archived() -> bool:
            done = conn.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()
            return done is not None and done[0] is not None and str(done[0]) >= segment

        wait_for(archived, 60, f"WAL segment {segment} to be archived", interval=0.2)
    return segment


def restore_drill(stack: MultigresStack, verify: dict[str, Any] | None, since: str,
                  field_manager: str = "safety-test") -> dict[str, Any]:
    """What a user writes for a restore drill now (spec.backup.verify and keys.ANN_RESTORE_DRILL_REQUEST);
    returns status.backup.drill.last once a requested drill ended after `since`, and its pod is gone."""
    patch_shard(stack, {"spec": {"backup": {"verify": verify}},
                        "metadata": {"annotations": {keys.ANN_RESTORE_DRILL_REQUEST: "now"}}}, field_manager)

    def ended() -> dict[str, Any] | None:
        drill = ((shard_cr(stack).get("status") or {}).get("backup") or {}).get("drill") or {}
        last = drill.get("last") or {}
        return last if last.get("finishedAt", "") > since and last.get("trigger") == "request" else None

    last: dict[str, Any] = wait_for(ended, 300, "the restore drill to end", interval=1)
    wait_for(lambda: not stack.pods(keys.COMPONENT_RESTORE_DRILL), 120, "the drill pod to go", interval=1)
    return last


def stop_restore_drills(stack: MultigresStack, field_manager: str = "safety-test") -> None:
    patch_shard(stack, {"spec": {"backup": {"verify": None}}}, field_manager)


def apply(stack: MultigresStack, change: Callable[[dict[str, Any]], None]) -> int:
    """Apply `change` to a copy of the MultigresShard's spec; returns the new generation."""
    cr = shard_cr(stack)
    doc = {"apiVersion": cr["apiVersion"], "kind": cr["kind"], "metadata": {"name": SHARD,
           "namespace": stack.namespace}, "spec": copy.deepcopy(cr["spec"])}
    change(doc["spec"])
    return int(stack.apply_shard(doc)["metadata"]["generation"])


def scale(stack: MultigresStack, replicas_per_cell: int, pool: str = "default") -> int:
    return apply(stack, lambda spec: spec["pools"][pool].update(replicasPerCell=replicas_per_cell))


def converge(stack: MultigresStack, generation: int, replicas: int, timeout: float = 900) -> None:
    wait_converged(stack, generation, timeout)
    stack.wait_serving(SHARD, replicas=replicas, timeout=600)


def wait_converged(stack: MultigresStack, generation: int, timeout: float = 900) -> None:
    """Until the operator reports `generation` observed and the shard Ready."""
    def done() -> bool:
        kube = stack.kube()
        try:
            cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD) or {}
        finally:
            kube.close()
        return (cr.get("status") or {}).get("observedGeneration") == generation and facts.condition_true(cr, "Ready")

    wait_for(done, timeout, f"generation {generation} to converge", interval=1)


def app_names(stack: MultigresStack) -> dict[str, str]:
    """uid -> the pod's application name in synchronous_standby_names (<cell>_<service id>)."""
    ids = stack.pooler_ids()
    return {facts.uid(p): f"{ids[facts.name(p)].cell}_{ids[facts.name(p)].name}" for p in stack.pods()}


def uids(stack: MultigresStack) -> dict[str, str]:
    return {facts.uid(p): facts.name(p) for p in stack.pods()}


# --- the claims ---------------------------------------------------------------------------------------
def first_terminating(watched: Watched, uid: str) -> float | None:
    return next((e.at for e in watched.timeline.of(uid) if e.deleting or e.type == "DELETED"), None)


def assert_replaced_one_at_a_time_primary_last(watched: Watched, before: dict[str, str], primary_uid: str) -> list[str]:
    """Every pod of `before` (uid -> name) was replaced, the primary last, and each only after the
    previous one's replacement was created. Returns the uids in the order their pods were deleted."""
    deleted = sorted(before, key=lambda uid: first_terminating(watched, uid) or float("inf"))
    assert all(first_terminating(watched, uid) is not None for uid in before), "every pod is replaced"
    assert deleted[-1] == primary_uid, "the primary is replaced last"
    created = sorted(e.at for e in watched.timeline.events if e.uid not in before and e.type == "ADDED")
    for earlier, later in itertools.pairwise(deleted):
        assert any(first_terminating(watched, earlier) < c < first_terminating(watched, later)  # type: ignore[operator]
                   for c in created), "two pods were replaced at once"
    return deleted


def drained_as_primary(watched: Watched, uid: str) -> bool:
    """Was the pod labelled PRIMARY at any moment since its drain was requested? A primary's drain ends
    with its own deletion (multiorch fails over once it is gone), and the agent may take the label
    away before the pod terminates; v0.1.0 quotes the primary itself in its synchronous_standby_names,
    so a primary's pod is judged by its drain, not by that list."""
    events = watched.timeline.of(uid)
    asked = next((e.at for e in events if e.drain == keys.DrainState.REQUESTED), None)
    return asked is not None and any(e.role == keys.Role.PRIMARY for e in events if e.at >= asked)


def listed(names: str, app: str) -> bool:
    """Is `app` one of the standbys of a synchronous_standby_names value (quoted or not)?"""
    return app in names.replace('"', " ").replace(",", " ").replace("(", " ").replace(")", " ").split()


FRESH_S = 3.0  # a sample older than this says nothing about the moment (the sampler takes one per 0.1 s)


def sync_set_at(watched: Watched, moment: float, after_s: float = FRESH_S) -> SyncSample:
    """The primary's synchronous_standby_names at `moment`: the last sample taken within FRESH_S
    before it, else (no primary to read just then, e.g. mid-failover) the first within `after_s` after
    (a standby still listed when its pod went stays listed until someone removes it)."""
    before = watched.sync.at(moment)
    if before is not None and moment - before.at <= FRESH_S:
        return before
    after = next((s for s in list(watched.sync.samples) if moment < s.at <= moment + after_s), None)
    assert after is not None, (f"no synchronous_standby_names sample from {FRESH_S}s before {moment:.1f} "
                               f"to {after_s}s after "
                               f"(last before: {before}; first after: "
                               f"{next((s for s in list(watched.sync.samples) if s.at > moment), None)})")
    return after


def assert_out_of_sync_set_when_deleted(watched: Watched, names: dict[str, str], deleted: list[str],
                                        after_s: float = FRESH_S, grace_s: float = 0.0) -> None:
    """Each deleted pod's standby was out of the primary's synchronous_standby_names when the pod
    started terminating (see sync_set_at), or `grace_s` later (still before its containers stop), and
    its drain had reached ready-for-deletion."""
    for uid in deleted:
        moment = first_terminating(watched, uid)
        assert moment is not None, f"pod {uid} ({names.get(uid)}) was never deleted"
        moment += grace_s
        sample = sync_set_at(watched, moment, after_s)
        drain = [(e.drain, round(e.at - moment, 1)) for e in watched.timeline.of(uid) if e.drain]
        assert not listed(sample.synchronous_standby_names, names[uid]), (
            f"{names[uid]} was still in the synchronous set when its pod was deleted at {moment:.1f}: {sample}; "
            f"its drain states (seconds from the deletion): {list(dict.fromkeys(drain))}")
        assert "ready-for-deletion" in watched.timeline.drain_states(uid)


def setting_on_every_pod(stack: MultigresStack, name: str) -> dict[str, str]:
    """`SHOW name` on every pool pod's PostgreSQL, by pod."""
    found = {}
    for member in stack.members():
        with psycopg.connect(stack.dsn(member.ip, SHARD), connect_timeout=3, autocommit=True) as conn:
            row = conn.execute(f"SHOW {name}").fetchone()
        assert row is not None
        found[member.pod] = str(row[0])
    return found


def assert_nothing_lost(watched: Watched, more: int = 50) -> None:
    """The load still flows, and every write PostgreSQL acknowledged is on the primary."""
    watched.load.wait_for_acks(more, timeout=180)
    where = watched.load.find_primary()
    missing = watched.load.missing(where)
    assert missing == [], (f"{len(missing)} of {len(watched.load.acked)} acknowledged writes are not on {where} "
                           f"(first {missing[:5]}, last {missing[-5:]}; ids acknowledged last: "
                           f"{watched.load.acked[-5:]}); out of recovery: "
                           f"{[(m.pod, m.ip) for m in watched.stack.members() if m.primary]}")


def no_record_left(stack: MultigresStack, pod_names: list[str], cells: tuple[str, ...] = ("zone1",)) -> None:
    plane = V0_1(dial_host=stack.dial_host)
    try:
        topo = ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf", cells)

        def gone() -> bool:
            hosts = {p.hostname.split(".")[0] for p in plane.list_poolers(topo)}
            return not hosts & set(pod_names)

        wait_for(gone, 120, f"the pooler records of {pod_names} to leave etcd", interval=1)
    finally:
        plane.close()


def primary_label_overlaps(events: list[PodEvent]) -> list[tuple[float, list[str]]]:
    """Every moment at which more than one pod (terminating ones included) carried role=PRIMARY."""
    current: dict[str, PodEvent] = {}
    overlaps = []
    for event in events:
        if event.type == "DELETED":
            current.pop(event.uid, None)
        else:
            current[event.uid] = event
        holders = sorted(e.name for e in current.values() if e.role == keys.Role.PRIMARY)
        if len(holders) > 1:
            overlaps.append((event.at, holders))
    return overlaps


def events_about(stack: MultigresStack, reason: str, name: str) -> list[dict[str, Any]]:
    """Events with `reason` whose object is named `name` (a pod, or the MultigresShard)."""
    kube = stack.kube()
    try:
        return [e for e in kube.list("v1", "Event", stack.namespace, "")
                if e.get("reason") == reason and e["involvedObject"].get("name") == name]
    finally:
        kube.close()


def drain_regressed_events(stack: MultigresStack, pod: str) -> list[dict[str, Any]]:
    return events_about(stack, "DrainRegressed", pod)


def assert_primary_handed_over(stack: MultigresStack, primary_pod: str) -> None:
    """The agent hurried the election when the primary's pod went (docs/agent.md, "Primary handover")."""
    handed = events_about(stack, "PrimaryHandedOver", primary_pod)
    assert handed, (f"no PrimaryHandedOver event for {primary_pod}; "
                    f"slow: {[e.get('message') for e in events_about(stack, 'PrimaryHandoverSlow', primary_pod)]}")
    # A Warning says multiorch was never reached (its own grace decided): the hurry did not happen.
    assert any(e.get("type") == "Normal" for e in handed), [e.get("message") for e in handed]


CONTAINERS = ("postgres", "multipooler")  # a v0.1.0 pool pod's (render/pool_v0_1.py)


def replacement_phases(watched: Watched, before: dict[str, str]) -> dict[str, dict[str, float | None]]:
    """Per pod of `before` (uid -> name) that was replaced: seconds from its drain request (a pod
    deleted from outside: from its deletion) to ready-for-deletion, to terminating, to gone, to its
    successor (same name) created, each of its containers ready, the agent's verdict (readiness gate
    True), Ready and labelled REPLICA, and listed in the primary's synchronous_standby_names (None:
    not seen)."""
    events = list(watched.timeline.events)
    apps = {name: app_names(watched.stack).get(uid) for uid, name in uids(watched.stack).items()}
    out: dict[str, dict[str, float | None]] = {}
    for uid, name in before.items():
        own = [e for e in events if e.uid == uid]
        asked = next((e.at for e in own if e.drain == keys.DrainState.REQUESTED),
                     next((e.at for e in own if e.deleting), None))
        successor = [e for e in events if e.name == name and e.uid not in before and asked is not None
                     and e.at >= asked]
        if asked is None or not successor:
            continue
        born = successor[0].at
        moments = {
            "ready-for-deletion": next((e.at for e in own if e.drain == keys.DrainState.READY_FOR_DELETION), None),
            "terminating": next((e.at for e in own if e.deleting), None),
            "gone": next((e.at for e in own if e.type == "DELETED"), None),
            "recreated": born,
            **{f"{c} ready": next((e.at for e in successor if c in e.ready_containers), None) for c in CONTAINERS},
            "verdict": next((e.at for e in successor if keys.POD_READINESS_GATE in e.conditions), None),
            "REPLICA+Ready": next((e.at for e in successor if e.ready and e.role == keys.Role.REPLICA), None),
            "in sync set": _added_after(watched, born, apps.get(name) or ""),
        }
        out[name] = {k: None if v is None else round(v - asked, 1) for k, v in moments.items()}
    return out


def _added_after(watched: Watched, born: float, app: str) -> float | None:
    """When the primary's synchronous_standby_names took `app` in after `born`: the first sample that
    lists it after one that did not. A name listed in every sample since `born` counts as not seen:
    v0.1.0's new primary lists its whole cohort, the old primary's pooler included, from its election
    on, before that pooler's successor exists (so it tells nothing about the successor)."""
    if not app:
        return None
    was_out = False
    for x in list(watched.sync.samples):
        if x.at <= born:
            continue
        if not listed(x.synchronous_standby_names, app):
            was_out = True
        elif was_out:
            return x.at
    return None


def roll_seconds(watched: Watched, before: dict[str, str]) -> float | None:
    """Seconds from the first drain request of a pod in `before` (uid -> name) to the moment the
    last of their successors was Ready and labelled REPLICA or PRIMARY (None: not seen)."""
    events = list(watched.timeline.events)
    asked = [e.at for e in events if e.uid in before and e.drain == keys.DrainState.REQUESTED]
    if not asked:
        return None
    start = min(asked)  # as in replacement_phases, an earlier incarnation of a name is no successor
    ready = [next((e.at for e in events if e.name == name and e.uid not in before and e.at >= start
                   and e.ready and e.role), None) for name in before.values()]
    if None in ready:
        return None
    return round(max(r for r in ready if r is not None) - start, 1)


def wait_agent_crash(stack: MultigresStack, effect: str, timeout: float = 300) -> None:
    """Until the agent SIGKILLed itself before `effect` (restart_agent(crash_before=effect))."""
    agent = stack.agent
    assert agent is not None
    wait_for(lambda: not agent.alive(), timeout, f"the agent to crash before {effect}", interval=0.2)
    assert agent.popen is not None and agent.popen.returncode == -9, agent.tail()
    assert f"crash-before {effect}: SIGKILL" in agent.tail(20000), agent.tail()


def note(what: str, value: object) -> None:
    print(f"[measured {time.strftime('%H:%M:%S')}] {what}: {value}", flush=True)
