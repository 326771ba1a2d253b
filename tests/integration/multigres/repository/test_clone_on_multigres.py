"""A new MultigresShard started from another shard's backups, on real Multigres v0.1.0 (issue #25,
spec.backup.cloneFrom; docs/operations.md, "Clone a shard").

The source (`play`, 3 pool pods) is under a steady write load. It gets rows, a backup taken on
request, more rows, and a WAL segment closed on purpose and archived. Its repository (the backup PVC)
is then checksummed. The clone (`clone`) gets its own clusterName and topology root, no multigateway,
the same archive_timeout, schedules that never fire, and `backup.cloneFrom.shard: play`. The engine
copies the source's repository into the clone's backup PVC (copy pod `clone-copy`, annotation
pools.multigres.com/clone). The clone's pods restore the newest backup and the archived WAL and stay
REPLICA. The agent elects their first primary with one certified rule change (annotation
pools.multigres.com/clone-election). The test waits for status.clone.state == Cloned and prints how
long the copy, the restore and the election took (an RTO figure for docs/operations.md).

The test then checks six things:
* the clone has exactly one primary;
* every row acknowledged on the source before the archived segment is in the clone (RPO in rows is
  printed);
* a synchronous write on the clone succeeds;
* a backup requested on the clone lands in the clone's own repository, and so does the timeline
  history of the clone's promotion;
* the source's repository has no changed and no removed file (its own archiver may add WAL);
* the source kept serving and lost nothing.

A second, small test: a clone of a shard that does not exist is refused (ConfigurationValid=False
naming spec.backup.cloneFrom.shard), and no pod or PVC is created.

**The stack is the package's** (conftest.py): the shard `play` of test_restore_on_multigres.py, whose
write load and samplers (safety.Watched) count `play`'s pods only, because every helper of the stack and
here is scoped by `app.kubernetes.io/instance=<clusterName>`. This module runs first, on the healthy
shard (the refusal first: it is quick and creates nothing), and deletes the clone with its PVCs at the
end, so the restore module finds the shard as it was, with one more backup.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.agent import podinfo
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack
from multigres_pools.playground.writeload import TABLE, WriteLoad

from ..safety import (
    SHARD,
    STACK_TIMEOUT,
    Watched,
    finished_backup,
    note,
    request_backup,
    shard_cr,
    shard_events,
    switch_and_archive,
)
from ..shards import alive, clone_spec, cluster_claims, cluster_pods, delete_quietly, delete_shard, writable_pods
from .stack import ARCHIVE_TIMEOUT, shard_spec

pytestmark = [pytest.mark.multigres, pytest.mark.cluster, STACK_TIMEOUT]

FIELD_MANAGER = "clone-test"
SOURCE_CLUSTER = "play"  # SHARD's clusterName in examples/playground-shard.yaml
CLONE, CLONE_REPLICAS = "clone", 3  # the MultigresShard and its clusterName; 3 as in the manual runs
MISSING, ORPHAN = "no-such-shard", "orphan"  # the refused clone's source, and its own name and clusterName
CLONE_FIELD = "spec.backup.cloneFrom.shard"
# Copy, restore and election: 18-19 s from apply to Cloned on an idle machine (three runs, 2026-11-29);
# the rest is room for shared cores and a failed copy's retry back-off (30 s, doubling).
CLONED_TIMEOUT_S = 900
RESTORED = "MonitorPostgres: successfully restored from backup"
TELLING = ("MonitorPostgres", "restore", "Restore", "Recruited", "appoint", "promotion", "password", "certified",
           "Certified")
OWN_TABLE = "clone_own_writes"  # written on the clone only


@dataclass
class Source:
    stack: MultigresStack
    load: WriteLoad
    password: str


# --- shards by clusterName -----------------------------------------------------------------------------
def _clone_spec(stack: MultigresStack, name: str, source: str) -> dict[str, Any]:
    """The package's shard settings (the same archive_timeout, as a copy of the source would have),
    cloned from `source`."""
    return clone_spec(shard_spec(stack, name, CLONE_REPLICAS), source)


def _repository(stack: MultigresStack, cluster: str) -> Path:
    """The backup PVC's directory on the host: the shard's filesystem repository."""
    assert stack.kubelet is not None
    (claim,) = [c for c in cluster_claims(stack, cluster) if c.startswith("backup-data-")]
    return stack.kubelet.pvc_path(stack.namespace, claim)


def _primary_ip(stack: MultigresStack, cluster: str, password: str) -> str | None:
    """As MultigresStack.primary_ip, among the pods of `cluster` only: the pod labelled PRIMARY by the
    agent, else the one whose PostgreSQL is not in recovery."""
    pods = [p for p in cluster_pods(stack, cluster) if alive(p) and (p.get("status") or {}).get("podIP")]
    labelled = [p for p in pods if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY]
    if labelled:
        return str(labelled[0]["status"]["podIP"])
    writable = writable_pods(stack, cluster, password)
    return writable[0][1] if len(writable) == 1 else None


def _app_names(stack: MultigresStack, cluster: str) -> dict[str, str]:
    """Pod -> its standby name (<cell>_<service id>), for the pool pods of `cluster`."""
    out = {}
    for pod in cluster_pods(stack, cluster):
        top = podinfo.pod_topology(pod)
        if top is not None:
            out[facts.name(pod)] = f"{top.pooler_id.cell}_{top.pooler_id.name}"
    return out


def _serving(stack: MultigresStack, cluster: str, replicas: int, password: str) -> dict[str, Any] | None:
    """`replicas` Ready pods of `cluster`, exactly one out of recovery, streaming to every other one
    synchronously (sync or quorum); what the primary says, else None."""
    pods = [p for p in cluster_pods(stack, cluster) if alive(p) and facts.condition_true(p, "Ready")]
    if len(pods) != replicas:
        return None
    (primary, *more) = writable_pods(stack, cluster, password) or [("", "")]
    if not primary[0] or more:
        return None
    with contextlib.suppress(psycopg.Error), psycopg.connect(
            stack.dsn(primary[1], password=password), connect_timeout=2, autocommit=True) as conn:
        senders = conn.execute("SELECT application_name, sync_state FROM pg_stat_replication").fetchall()
        names = conn.execute("SELECT current_setting('synchronous_standby_names')").fetchone()
        synchronous = sorted(str(app) for app, state in senders if state in ("sync", "quorum"))
        if len(synchronous) == replicas - 1:
            return {"pod": primary[0], "ip": primary[1], "synchronous": synchronous,
                    "synchronous_standby_names": names[0] if names else ""}
    return None


def _password_secret(stack: MultigresStack, name: str) -> str:
    """The name of the Secret the shard's superuser password is read from."""
    return model.load_spec(shard_cr(stack, name)["spec"], root="spec").password_secret().name


# --- the source ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def source(watched: Watched) -> Source:
    """The package's shard SHARD (the clone's source) under its write load, aimed at SHARD's primary only."""
    return Source(watched.stack, watched.load, watched.stack.password(SHARD))


def _take_source_backup(src: Source) -> dict[str, Any]:
    previous = ((((shard_cr(src.stack).get("status") or {}).get("backup") or {}).get("last")) or {}).get(
        "startedAt", "")
    request_backup(src.stack, "full", FIELD_MANAGER)
    last: dict[str, Any] = wait_for(lambda: finished_backup(src.stack, "request", previous), 300,
                                    "the source's requested backup to finish", interval=1)
    assert not last.get("error"), last
    return last


def _checksums(root: Path) -> dict[str, str]:
    """Every entry under `root`: uid:gid:mode, and the sha256 of a file or the target of a symlink.
    pgBackRest's temporary files are left out (the source's archiver renames them away any moment)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if rel.endswith(".pgbackrest.tmp"):
            continue
        try:
            st = path.lstat()
            meta = f"{st.st_uid}:{st.st_gid}:{oct(st.st_mode)}"
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"{meta}:->{os.readlink(path)}"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = f"{meta}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
            else:
                out[rel + "/"] = meta
        except FileNotFoundError:  # gone between the listing and the read
            continue
    return out


def _rows(stack: MultigresStack, ip: str, password: str, ids: list[int]) -> set[int]:
    with psycopg.connect(stack.dsn(ip, password=password), connect_timeout=5) as conn:
        return {int(i) for (i,) in conn.execute(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)", (ids,)).fetchall()}


def _prepare_source(src: Source) -> dict[str, Any]:
    """Steps 1 and 2: rows, a backup, more rows, a segment archived; then the repository's checksums.
    Returns what the clone is judged by."""
    stack, load = src.stack, src.load
    assert _archiver_setting(src) == ARCHIVE_TIMEOUT, "spec.postgresConfig did not reach the source's PostgreSQL"
    load.wait_for_acks(100, timeout=120)
    before_backup = list(load.acked)
    backup = _take_source_backup(src)
    note("source backup", {k: backup.get(k) for k in ("backupId", "pod", "startedAt", "finishedAt")})
    load.wait_for_acks(50, timeout=120)
    before_segment = list(load.acked)
    segment = switch_and_archive(src.stack, _primary_ip(src.stack, SOURCE_CLUSTER, src.password), src.password)
    repository = _repository(stack, SOURCE_CLUSTER)
    sums = _checksums(repository)
    note("source repository before the clone", {"path": str(repository), "entries": len(sums),
                                                "segment archived on purpose": segment,
                                                "acknowledged before the backup": len(before_backup),
                                                "acknowledged before the segment": len(before_segment)})
    assert any(k.startswith("backup/") and backup["backupId"] in k for k in sums), "the backup is not in the repository"
    return {"backup": backup, "before_backup": before_backup, "before_segment": before_segment,
            "segment": segment, "repository": repository, "checksums": sums}


def _archiver_setting(src: Source) -> str:
    primary = _primary_ip(src.stack, SOURCE_CLUSTER, src.password)
    assert primary is not None
    with psycopg.connect(src.stack.dsn(primary, password=src.password), connect_timeout=5) as conn:
        row = conn.execute("SELECT current_setting('archive_timeout')").fetchone()
    return str(row[0]) if row else ""


# --- the clone -----------------------------------------------------------------------------------------
def _wait_cloned(stack: MultigresStack, applied: float) -> tuple[dict[str, Any], dict[str, float]]:
    """Until status.clone.state is Cloned; returns it and when (monotonic) each milestone was first seen:
    `copy pod`, `state <S>` (status.clone), `election <S>` (the agent's record), `restored` (status.restore)."""
    seen: dict[str, float] = {"applied": applied}
    last: list[str] = ["nothing yet"]

    def look() -> dict[str, Any] | None:
        cr = shard_cr(stack, CLONE)
        now = time.monotonic()
        status = cr.get("status") or {}
        clone = status.get("clone") or {}
        election = facts.json_annotation(cr, keys.ANN_CLONE_ELECTION) or {}
        if clone.get("state"):
            if f"state {clone['state']}" not in seen and clone["state"] == "Failed":
                note("the copy failed (the engine tries again)", clone)
            seen.setdefault(f"state {clone['state']}", now)
        if election.get("state"):
            seen.setdefault(f"election {election['state']}", now)
        if (status.get("restore") or {}).get("state") == "Restored":
            seen.setdefault("restored", now)
        if "copy pod" not in seen and cluster_pods(stack, CLONE, keys.COMPONENT_CLONE_COPY):
            seen.setdefault("copy pod", now)
        last[0] = json.dumps({"clone": clone, "restore": status.get("restore"), "election": election,
                              "copy record": facts.json_annotation(cr, keys.ANN_CLONE),
                              "conditions": [(c.get("type"), c.get("status"), c.get("reason"))
                                             for c in status.get("conditions") or []]}, default=str)[:3000]
        return clone if clone.get("state") == "Cloned" else None

    try:
        cloned: dict[str, Any] = wait_for(look, CLONED_TIMEOUT_S, "status.clone.state to be Cloned", interval=0.5,
                                          last_seen=lambda: f"{last[0]}; pods {_pod_states(stack, CLONE)}")
    except TimeoutError:
        note("the clone did not finish; what its pods said", _telling(stack, CLONE))
        note("the copy pod's output", _copy_output(stack))
        raise
    return cloned, seen


def _phases(seen: dict[str, float]) -> dict[str, float | None]:
    """Seconds per phase, from the milestones of _wait_cloned (None: a boundary was not seen)."""
    applied, cloned = seen["applied"], seen["state Cloned"]
    copied = min(seen[k] for k in ("state Restoring", "election Waiting", "state Cloned") if k in seen)
    restored = seen.get("restored")
    if restored is not None and not copied <= restored <= cloned:
        restored = None  # a Restored of no use as a boundary

    def span(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(b - a, 1)

    return {"copy (applied to copied)": span(applied, copied),
            "copy pod seen after": span(applied, seen.get("copy pod")),
            "restore (copied to status.restore Restored)": span(copied, restored),
            "election (restored to Cloned)": span(restored, cloned),
            "restore + election (copied to Cloned)": span(copied, cloned),
            "total (applied to Cloned)": span(applied, cloned)}


def _telling(stack: MultigresStack, cluster: str) -> dict[str, list[str]]:
    """The lines of each multipooler and multiorch log of `cluster` that tell of a restore or an election."""
    assert stack.kubelet is not None
    out: dict[str, list[str]] = {}
    for component, container in ((keys.COMPONENT_POOL, "multipooler"), (keys.COMPONENT_MULTIORCH, "multiorch")):
        for pod in cluster_pods(stack, cluster, component):
            try:
                log = stack.kubelet.logs(stack.namespace, facts.name(pod), container)
            except FileNotFoundError as exc:
                out[facts.name(pod)] = [str(exc)]
                continue
            out[facts.name(pod)] = [line[:300] for line in log.splitlines() if any(t in line for t in TELLING)][-20:]
    return out


def _restored_backups(stack: MultigresStack, cluster: str) -> dict[str, str | None]:
    """Pod -> the backup id its multipooler says it restored (pods that say nothing left out)."""
    assert stack.kubelet is not None
    out: dict[str, str | None] = {}
    for pod in cluster_pods(stack, cluster):
        with contextlib.suppress(FileNotFoundError):
            log = stack.kubelet.logs(stack.namespace, facts.name(pod), "multipooler")
            line = next((x for x in log.splitlines() if RESTORED in x), None)
            if line is not None:
                try:
                    value = json.loads(line).get("backup_id")
                except ValueError:
                    value = None
                out[facts.name(pod)] = None if value is None else str(value)
    return out


def _pod_states(stack: MultigresStack, cluster: str) -> list[tuple[str, str, str]]:
    """(name, phase, role label) of every pod of `cluster`."""
    return [(facts.name(p), str((p.get("status") or {}).get("phase")), str(facts.labels(p).get(keys.LABEL_ROLE)))
            for p in cluster_pods(stack, cluster, None)]


def _copy_output(stack: MultigresStack) -> str:
    assert stack.kubelet is not None
    pods = cluster_pods(stack, CLONE, keys.COMPONENT_CLONE_COPY)
    if not pods:
        return "no copy pod now"
    try:
        return stack.kubelet.logs(stack.namespace, facts.name(pods[0]), keys.CLONE_COPY_CONTAINER)[-2000:]
    except FileNotFoundError as exc:
        return str(exc)


def _take_clone_backup(stack: MultigresStack) -> dict[str, Any]:
    def last() -> dict[str, Any]:
        return ((shard_cr(stack, CLONE).get("status") or {}).get("backup") or {}).get("last") or {}

    previous = last().get("startedAt", "")
    request_backup(stack, "full", FIELD_MANAGER, CLONE)

    def done() -> dict[str, Any] | None:
        found = last()
        return found if (found.get("trigger") == "request" and found.get("finishedAt")
                         and found["startedAt"] > previous) else None

    finished: dict[str, Any] = wait_for(done, 300, "the clone's requested backup to finish", interval=1)
    assert not finished.get("error"), finished
    return finished


def _diff(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(changed, removed, added) entries between two _checksums."""
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    removed = sorted(set(before) - set(after))
    added = sorted(set(after) - set(before))
    return changed, removed, added


# --- the tests -----------------------------------------------------------------------------------------
def test_a_clone_of_a_missing_shard_is_refused_and_creates_nothing(source: Source) -> None:
    stack = source.stack
    stack.apply_shard(_clone_spec(stack, ORPHAN, MISSING))
    try:
        def refused() -> dict[str, Any] | None:
            cond = facts.condition(shard_cr(stack, ORPHAN), keys.ShardCondition.CONFIGURATION_VALID) or {}
            return cond if cond.get("status") == "False" else None

        cond = wait_for(refused, 180, "ConfigurationValid=False on the clone of a missing shard", interval=1,
                        last_seen=lambda: json.dumps((shard_cr(stack, ORPHAN).get("status") or {}), default=str)[:2000])
        refused_at = time.monotonic()
        assert CLONE_FIELD in cond.get("message", ""), cond
        assert MISSING in cond.get("message", ""), cond
        # Refused, and it stays so: the operator's passes of the next 10 s (coalesce 0.05 s; the agent polls
        # every second) create nothing either.
        wait_for(lambda: time.monotonic() - refused_at > 10, 30, "10 s after the refusal", interval=1)
        cr = shard_cr(stack, ORPHAN)
        still = facts.condition(cr, keys.ShardCondition.CONFIGURATION_VALID) or {}
        pods = [facts.name(p) for p in cluster_pods(stack, ORPHAN, None)]
        claims = cluster_claims(stack, ORPHAN)
        kube = stack.kube()
        try:
            deployments = [facts.name(d) for d in kube.list("apps/v1", "Deployment", stack.namespace,
                                                           f"{keys.LABEL_APP_INSTANCE}={ORPHAN}")]
        finally:
            kube.close()
        note("clone of a missing shard", {"reason": cond.get("reason"), "message": cond.get("message", "")[:400],
                                          "phase": (cr.get("status") or {}).get("phase"),
                                          "status.clone": (cr.get("status") or {}).get("clone"),
                                          "pods": pods, "claims": claims, "deployments": deployments})
        assert still.get("status") == "False" and CLONE_FIELD in still.get("message", ""), still
        assert pods == [], pods
        assert claims == [], claims
        delete_shard(stack, ORPHAN, ORPHAN)
    finally:
        delete_quietly(stack, ORPHAN, ORPHAN)


def test_a_clone_starts_from_the_source_backups_elects_its_own_primary_and_leaves_the_source_alone(
        source: Source) -> None:
    stack, load = source.stack, source.load
    # 1-2: the source's rows, backup, archived segment, and its repository as it is before the clone.
    prepared = _prepare_source(source)
    source_pods = {facts.uid(p): facts.name(p) for p in cluster_pods(stack, SOURCE_CLUSTER)}

    # 3: the clone.
    applied = time.monotonic()
    stack.apply_shard(_clone_spec(stack, CLONE, SHARD))
    acked_at_apply = min(len(load.acked), len(load.ack_times))
    try:
        # 4: until it has its own primary.
        cloned, seen = _wait_cloned(stack, applied)
        cr = shard_cr(stack, CLONE)
        note("status.clone", cloned)
        note("clone records", {"copy": facts.json_annotation(cr, keys.ANN_CLONE),
                               "election": facts.json_annotation(cr, keys.ANN_CLONE_ELECTION),
                               "Cloning": facts.condition(cr, keys.ShardCondition.CLONING), "status.restore":
                               (cr.get("status") or {}).get("restore")})
        note("clone RTO, seconds per phase", _phases(seen))
        # No pooler is PRIMARY until the election, by design: the agent's backup check waits for it
        # instead of warning every pass.
        assert shard_events(stack, "BackupCheckFailed", CLONE) == [], "a backup check warned before the election"
        note("clone milestones (seconds after apply)", {k: round(v - applied, 1) for k, v in seen.items()})
        assert cloned.get("source") in (SHARD, f"{stack.namespace}/{SHARD}"), cloned
        cloning = facts.condition(cr, keys.ShardCondition.CLONING) or {}
        assert (cloning.get("status"), cloning.get("reason")) == ("False", "Cloned"), cloning
        # The copy pod is a throwaway: nothing of it stays.
        wait_for(lambda: not cluster_pods(stack, CLONE, keys.COMPONENT_CLONE_COPY), 60, "the copy pod to go",
                 interval=1)
        restored = _restored_backups(stack, CLONE)
        note("what the clone's poolers restored", restored)
        assert restored, f"no clone pooler logged a restore: {_telling(stack, CLONE)}"
        assert set(restored.values()) == {prepared["backup"]["backupId"]}, restored
        # The clone logs in with the source's password, kept in a Secret of its own.
        assert stack.password(CLONE) == source.password, "the clone's password is not the source's"
        assert _password_secret(stack, CLONE) != _password_secret(stack, SHARD)

        # 5a: exactly one primary, labelled so, and it is the leader status.clone names.
        try:
            primary = wait_for(lambda: _serving(stack, CLONE, CLONE_REPLICAS, source.password), 300,
                               f"the clone's {CLONE_REPLICAS} pods to serve with one primary", interval=1)
        except TimeoutError:
            note("the clone does not serve; what its pods said", _telling(stack, CLONE))
            raise
        writable = writable_pods(stack, CLONE, source.password)
        assert [pod for pod, _ in writable] == [primary["pod"]], writable

        def one_label() -> list[str] | None:
            labelled = [facts.name(p) for p in cluster_pods(stack, CLONE)
                        if facts.labels(p).get(keys.LABEL_ROLE) == keys.Role.PRIMARY]
            return labelled if labelled == [primary["pod"]] else None

        wait_for(one_label, 60, f"{primary['pod']} alone labelled PRIMARY", interval=1)
        apps = _app_names(stack, CLONE)
        if cloned.get("leader"):
            assert cloned["leader"] == apps[primary["pod"]], (cloned, apps)
        assert set(primary["synchronous"]) <= set(apps.values()), (primary, apps)  # its own poolers only
        told = {pod: lines[-6:] for pod, lines in _telling(stack, CLONE).items()}
        note("the clone's primary", {**primary, "app names": apps, "what the clone's pods said": told})

        # 5b: every row acknowledged on the source before the archived segment is in the clone. RPO: the
        # rows acknowledged before the clone was applied that it does not have (the archive lags by up to
        # archive_timeout, plus the WAL archived during the copy).
        pairs = list(zip(load.acked[:acked_at_apply], load.ack_times[:acked_at_apply], strict=True))
        before_apply = [i for i, _ in pairs]
        present = _rows(stack, primary["ip"], source.password, before_apply)
        missing = [i for i in before_apply if i not in present]
        first_missing = next((n for n, i in enumerate(before_apply) if i not in present), len(before_apply))
        rpo_s = pairs[-1][1] - pairs[first_missing][1] if first_missing < len(pairs) else 0.0
        newest = max(present, default=0)
        newest_at = next((t for i, t in pairs if i == newest), applied)
        note("clone RPO", {"acknowledged on the source before the backup": len(prepared["before_backup"]),
                           "before the archived segment": len(prepared["before_segment"]),
                           "before the clone was applied": len(before_apply), "in the clone": len(present),
                           "RPO rows (acknowledged before apply, not in the clone)": len(missing),
                           "RPO seconds": round(rpo_s, 1),
                           "newest row's age at apply (s)": round(applied - newest_at, 1),
                           "segment": prepared["segment"]})
        assert set(prepared["before_backup"]) <= present, "a row acknowledged before the source's backup is missing"
        assert set(prepared["before_segment"]) <= present, (
            f"a row acknowledged before segment {prepared['segment']} was archived is missing from the clone")

        # 5c: a synchronous write on the clone.
        with psycopg.connect(stack.dsn(primary["ip"], password=source.password), connect_timeout=5,
                             autocommit=True) as conn:
            settings = conn.execute("SELECT current_setting('synchronous_standby_names'), "
                                    "current_setting('synchronous_commit')").fetchone()
            assert settings is not None and settings[0] and settings[1] in ("on", "remote_apply"), settings
            conn.execute(f"CREATE TABLE {OWN_TABLE} (id int PRIMARY KEY, at timestamptz DEFAULT now())")
            started = time.monotonic()
            for i in range(1, 21):
                conn.execute(f"INSERT INTO {OWN_TABLE} (id) VALUES (%s)", (i,))
            took = time.monotonic() - started
            count = conn.execute(f"SELECT count(*) FROM {OWN_TABLE}").fetchone()
            senders = conn.execute("SELECT application_name, sync_state, replay_lsn::text "
                                   "FROM pg_stat_replication").fetchall()
        note("synchronous writes on the clone", {"rows": count, "seconds for 20 commits": round(took, 2),
                                                 "synchronous_standby_names": settings[0], "standbys": senders})
        assert count == (20,), count
        assert any(state in ("sync", "quorum") for _, state, _ in senders), senders
        src_primary = _primary_ip(stack, SOURCE_CLUSTER, source.password)
        assert src_primary is not None
        with psycopg.connect(stack.dsn(src_primary, password=source.password), connect_timeout=5) as conn:
            leaked = conn.execute("SELECT to_regclass(%s)", (OWN_TABLE,)).fetchone()
        assert leaked == (None,), "the clone's write reached the source"

        # 5d: a backup of the clone, into the clone's own repository.
        clone_backup = _take_clone_backup(stack)
        clone_repo = _repository(stack, CLONE)
        note("the clone's backup", {k: clone_backup.get(k) for k in ("backupId", "pod", "startedAt", "finishedAt")})
        assert clone_backup["backupId"] != prepared["backup"]["backupId"], clone_backup
        assert (clone_repo / "backup" / "multigres" / clone_backup["backupId"]).is_dir(), clone_repo
        assert not (prepared["repository"] / "backup" / "multigres" / clone_backup["backupId"]).exists()
        assert clone_repo != prepared["repository"]
        # The clone's promotion started a timeline of its own: its history file went into the clone's
        # repository (into the source's, it would spoil the source's PITR once the source reaches that
        # timeline too).
        def own_history() -> list[str] | None:
            found = sorted(str(h.relative_to(clone_repo)) for h in (clone_repo / "archive").rglob("*.history"))
            new = [h for h in found if not (prepared["repository"] / h).exists()]
            return new or None

        histories = wait_for(own_history, 60, "the clone's own timeline history in its repository", interval=1)
        note("the clone's own timeline history", histories)

        # 5e: the source's repository: nothing changed or removed; only its own archiver added WAL.
        after = _checksums(prepared["repository"])
        changed, removed, added = _diff(prepared["checksums"], after)
        note("source repository after the clone's backup", {
            "entries before": len(prepared["checksums"]), "after": len(after), "changed": changed[:20],
            "removed": removed[:20], "added": len(added), "added (first)": added[:10]})
        assert changed == [], changed
        assert removed == [], removed
        assert all(a.startswith("archive/") and not a.endswith(".history") for a in added), added

        # The source served throughout: the same pods, the load acknowledged on, and nothing it
        # acknowledged is missing.
        load.wait_for_acks(50, timeout=120)
        assert {facts.uid(p): facts.name(p) for p in cluster_pods(stack, SOURCE_CLUSTER)} == source_pods
        missing_on_source = load.missing()
        assert missing_on_source == [], f"{len(missing_on_source)} acknowledged writes missing on the source"
        delete_shard(stack, CLONE, CLONE)
    finally:
        delete_quietly(stack, CLONE, CLONE)
