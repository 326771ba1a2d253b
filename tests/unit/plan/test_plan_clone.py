"""The clone (spec.backup.cloneFrom) in the engine: the source read live (reconcile/clone_source.py), the
copy pod (render/clone.py), its script (state/clone.py, run here on directories), the copy's steps and
the hold on pool pods (plan/clone.py), and status.clone (status/clone.py). Run for real on Multigres
v0.1.0 in tests/integration/multigres/repository/test_clone_on_multigres.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import clone_source
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import clone
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import CloneSource
from ansible_collections.multigres.pools.plugins.module_utils.status import clone as clone_status
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from tests import render_corpus as corpus

from .plan_factories import NOW, desired, events, healthy, observed, plan, shard_cr, writes

SOURCE_NAME = "db/source"
SOURCE = CloneSource(name=SOURCE_NAME, backup_pvc="backup-data-source-pvc", password=("source-pw", "password"),
                     pool_selector=(("app.kubernetes.io/instance", "source"),))
CLONE_SPEC = corpus.spec({"backup": {"cloneFrom": {"shard": "source"}}})


def _rendered(source: CloneSource | None = SOURCE, **patch: Any) -> Any:
    spec = model.load_spec(corpus.merge_patch(CLONE_SPEC, patch))
    return render.desired_state(spec, "db", owner={"name": "demo", "uid": "cr-uid-1"}, clone_source=source)


def _want(source: CloneSource | None = SOURCE) -> Any:
    got = _rendered(source)
    return dataclasses.replace(desired(), clone_from=got.clone_from, clone=got.clone)


def _seen(record: dict[str, Any] | None = None, pod: dict[str, Any] | None = None, *, pods: bool = False,
          election: dict[str, Any] | None = None) -> Any:
    anns = {keys.ANN_CLONE: json.dumps(record)} if record is not None else {}
    if election is not None:
        anns[keys.ANN_CLONE_ELECTION] = json.dumps(election)
    live = healthy(desired().pools[0]) if pods else ([], [])
    return dataclasses.replace(observed(*live, cr=shard_cr(annotations=anns)), clone_pod=pod)


def _record(result: Any) -> dict[str, Any]:
    (patch,) = [a for a in result.actions if a.kind == keys.SHARD_KIND and a.verb == "patch"
                and keys.ANN_CLONE in a.body["metadata"]["annotations"]]
    rec: dict[str, Any] = json.loads(patch.body["metadata"]["annotations"][keys.ANN_CLONE])
    return rec


def _copy_pod(phase: str | None = None, code: int | None = None, message: str = "") -> dict[str, Any]:
    pod = dict(_want().clone.pod)
    pod["metadata"] = pod["metadata"] | {"uid": "copy-uid", "resourceVersion": "4"}
    if phase:
        terminated = {"exitCode": code, "finishedAt": "2026-05-01T11:59:40Z", "message": message}
        pod["status"] = {"phase": phase, "containerStatuses": [
            {"name": keys.CLONE_COPY_CONTAINER, "state": {"terminated": terminated}}]}
    return pod


COPYING = {"state": "Copying", "source": SOURCE_NAME, "pod": naming.clone_copy_pod_name(naming.ShardId(
    "demo", "postgres", "default", "0-inf")), "startedAt": "2026-05-01T11:58:00Z", "attempt": 1}


# --- render ---------------------------------------------------------------------------------------
def test_the_copy_pod_reads_the_source_read_only_and_writes_only_this_shards_volume() -> None:
    got = _rendered()
    pod = got.clone.pod
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"][keys.LABEL_APP_COMPONENT] == keys.COMPONENT_CLONE_COPY
    assert meta["ownerReferences"][0]["uid"] == "cr-uid-1"
    claims = {v["name"]: v["persistentVolumeClaim"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
    assert claims["source"] == {"claimName": SOURCE.backup_pvc, "readOnly": True}
    own = next(o for o in got.objects if o["kind"] == "PersistentVolumeClaim")["metadata"]["name"]
    assert claims["target"] == {"claimName": own}
    (container,) = spec["containers"]
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in container["volumeMounts"]}
    assert mounts[clone.SOURCE] is True and mounts[clone.TARGET] is False
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    # ReadWriteOnce volumes: beside the source's pool pods, where its backup volume is attached.
    term = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["labelSelector"]["matchLabels"] == dict(SOURCE.pool_selector)


def test_a_clone_copies_the_source_password_and_never_initdbs() -> None:
    got = _rendered()
    assert got.generated_password.copy_from == SOURCE.password
    assert got.bootstrap.mode == keys.Bootstrap.RECOVERY
    done = _rendered(None)  # the copy is recorded: the source is not read any more
    assert done.clone is None and done.clone_from == SOURCE_NAME and done.generated_password.copy_from is None
    assert done.bootstrap.mode == keys.Bootstrap.RECOVERY
    plain = render.desired_state(model.load_spec(corpus.spec()), "db")
    assert plain.clone_from is None and plain.generated_password.copy_from is None


# --- the source, read live --------------------------------------------------------------------------
class _Reader:
    def __init__(self, *shards: dict[str, Any]) -> None:
        self.shards = {s["metadata"]["name"]: s for s in shards}

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        assert kind == keys.SHARD_KIND and namespace == "db"
        return self.shards.get(name)


def _shard(name: str, **patch: Any) -> dict[str, Any]:
    doc = corpus.document(name, "db", corpus.spec({"clusterName": name, **patch}))
    doc["metadata"]["uid"] = f"uid-{name}"
    return doc


def _read(reader: _Reader, cr: dict[str, Any] | None = None) -> CloneSource | None:
    spec = model.load_spec(CLONE_SPEC)
    return clone_source.read(reader, spec, "db", cr or _shard("demo", backup={"cloneFrom": {"shard": "source"}}))


def test_the_source_gives_its_backup_volume_password_and_pool_pods() -> None:
    running = _shard("source")
    running["metadata"]["annotations"] = {keys.ANN_BACKUP_STATE: json.dumps({"running": {"type": "full"}})}
    found = _read(_Reader(running))
    sid = model.load_spec(running["spec"]).shard_id
    assert found is not None and found.name == "db/source" and found.backup_running
    assert found.backup_pvc == naming.shard_backup_pvc_name(sid)
    assert found.password == (naming.password_secret_name(sid), "password")
    assert dict(found.pool_selector)[keys.LABEL_CLUSTER] == "source"


@pytest.mark.parametrize(("shards", "problem"), [
    ((), "no MultigresShard 'source' in namespace db: nothing is created until it exists"),
    ((_shard("source", backup={"type": "s3", "s3": {"bucket": "bkt", "region": "r"}}),), "keeps its backups in S3"),
    ((_shard("source", multigres={"version": "d782aa06"}, durabilityPolicy="AT_LEAST_2"),), "runs Multigres d782aa06"),
])
def test_a_source_that_cannot_be_copied_refuses_the_clone(shards: tuple[dict[str, Any], ...], problem: str) -> None:
    with pytest.raises(model.SpecError) as refused:
        _read(_Reader(*shards))
    (line,) = refused.value.errors
    assert line.startswith("spec.backup.cloneFrom.shard: ") and problem in line


def test_a_source_being_deleted_or_the_shard_itself_refuses() -> None:
    leaving = _shard("source")
    leaving["metadata"]["deletionTimestamp"] = "2026-05-01T11:00:00Z"
    with pytest.raises(model.SpecError, match="is being deleted"):
        _read(_Reader(leaving))
    me = _shard("source", backup={"cloneFrom": {"shard": "source"}})
    with pytest.raises(model.SpecError, match="is this MultigresShard itself"):
        _read(_Reader(me), me)


def test_once_copied_the_source_is_not_read_again() -> None:
    cr = _shard("demo", backup={"cloneFrom": {"shard": "source"}})
    cr["metadata"]["annotations"] = {keys.ANN_CLONE: json.dumps({"state": "Copied", "source": "db/source"})}
    assert _read(_Reader(), cr) is None  # the source is gone, and that is fine now


# --- the plan ---------------------------------------------------------------------------------------
def test_the_copy_starts_first_and_no_pool_pod_exists_before_it_ends() -> None:
    result = plan(_want(), _seen(), NOW)
    assert _record(result) | {"startedAt": "t"} == {"state": "Copying", "source": SOURCE_NAME, "attempt": 1,
                                                   "pod": _want().clone.pod_name, "startedAt": "t"}
    assert writes(result, "apply", "Pod") == [_want().clone.pod_name]
    assert "CloneCopyStarted" in events(result)
    assert result.waiting == [f"copying the repository of {SOURCE_NAME}"]
    running = plan(_want(), _seen(COPYING, _copy_pod("Running")), NOW)
    assert writes(running, "apply", "Pod") == [] and running.requeue_after > 0


def test_a_finished_copy_is_recorded_its_pod_deleted_and_the_pool_pods_created() -> None:
    result = plan(_want(), _seen(COPYING, _copy_pod("Succeeded", 0)), NOW)
    rec = _record(result)
    assert rec["state"] == "Copied" and rec["finishedAt"] == "2026-05-01T11:59:40Z"
    assert writes(result, "delete", "Pod") == [_want().clone.pod_name]
    pool_pods = [n for n in writes(result, "apply", "Pod") if n != _want().clone.pod_name]
    assert len(pool_pods) == desired().pools[0].replicas
    assert "CloneCopied" in events(result)


def test_a_failed_copy_is_recorded_and_tried_again_after_a_back_off() -> None:
    message = "clone-copy: this shard's backup volume holds archive"
    result = plan(_want(), _seen(COPYING, _copy_pod("Failed", clone.EXIT_TARGET_USED, message)), NOW)
    rec = _record(result)
    assert rec["state"] == "Failed" and rec["reason"] == "TargetNotEmpty" and message in rec["message"]
    assert "CloneCopyFailed" in events(result) and writes(result, "apply", "Pod") == []
    failed = rec
    soon = plan(_want(), _seen(failed), dt.datetime(2026, 5, 1, 12, 0, 5, tzinfo=dt.UTC))
    assert writes(soon, "apply", "Pod") == [] and "next attempt at 2026-05-01T12:00:10Z" in soon.waiting[0]
    later = plan(_want(), _seen(failed), dt.datetime(2026, 5, 1, 12, 0, 11, tzinfo=dt.UTC))
    assert writes(later, "apply", "Pod") == [_want().clone.pod_name] and _record(later)["attempt"] == 2


def test_a_copy_waits_for_the_sources_running_backup() -> None:
    busy = _want(dataclasses.replace(SOURCE, backup_running=True))
    result = plan(busy, _seen(), NOW)
    assert writes(result, "apply", "Pod") == [] and "base backup" in result.waiting[0]


def test_a_lost_copy_pod_fails_the_attempt_and_a_running_shard_is_never_copied_over() -> None:
    lost = plan(_want(), _seen(COPYING), NOW + dt.timedelta(minutes=5))
    assert _record(lost)["reason"] == "PodLost"
    # The record is gone but pods run (or the agent recorded the election): nothing is copied.
    for seen in (_seen(pods=True), _seen(election={"state": "Elected"})):
        result = plan(_want(), seen, NOW)
        assert _want().clone.pod_name not in writes(result, "apply", "Pod")
        assert not [a for a in result.actions if a.kind == keys.SHARD_KIND and keys.ANN_CLONE in
                    ((a.body or {}).get("metadata") or {}).get("annotations", {})]


# --- status -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("record", "election", "state", "reason"), [
    (None, None, "Copying", "CopyingRepository"),
    (COPYING, None, "Copying", "CopyingRepository"),
    ({**COPYING, "state": "Failed", "reason": "CopyFailed", "message": "tar: short read"}, None, "Failed",
     "CopyFailed"),
    ({**COPYING, "state": "Copied", "finishedAt": "2026-05-01T11:59:40Z"},
     {"state": "Waiting", "message": "1 of 3 poolers still replays"}, "Restoring", "RestoringCopy"),
    ({**COPYING, "state": "Copied", "finishedAt": "2026-05-01T11:59:40Z"},
     {"state": "Elected", "leader": "z1_p-1", "term": 2, "frozenLsn": "0/7000000", "at": "2026-05-01T12:01:00Z"},
     "Cloned", "Cloned"),
])
def test_status_clone_tells_the_story(record: dict[str, Any] | None, election: dict[str, Any] | None, state: str,
                                      reason: str) -> None:
    seen = _seen(record, election=election)
    got = clone_status.status(SOURCE_NAME, seen.cr)
    assert got is not None and got["state"] == state and got["source"] == SOURCE_NAME
    cond = clone_status.condition(got)
    assert cond is not None and cond["reason"] == reason
    assert cond["status"] == ("False" if state == "Cloned" else "True")
    if state == "Cloned":
        assert got | {"message": ""} == {"source": SOURCE_NAME, "state": "Cloned", "attempt": 1, "message": "",
                                         "copiedAt": "2026-05-01T11:59:40Z", "leader": "z1_p-1", "term": 2,
                                         "frozenLsn": "0/7000000", "electedAt": "2026-05-01T12:01:00Z"}
    if state == "Restoring":
        assert got["message"] == "1 of 3 poolers still replays"
    want = _want()
    written = status.compute(want, seen, plan(want, seen, NOW), stamp="2026-05-01T12:00:00Z")
    assert written["clone"]["state"] == state
    assert {c["type"]: c["reason"] for c in written["conditions"]}[keys.ShardCondition.CLONING] == reason
    assert clone_status.status(None, seen.cr) is None  # no clone: no status.clone, no condition


# --- the script, on directories (pgbackrest stands in as a shell function) ---------------------------
def _run(tmp: Path, info: str = '{"backup":[{"label":"20260501-110000F"}]}') -> subprocess.CompletedProcess[str]:
    text = clone.script()
    for path in (clone.SOURCE, clone.TARGET, clone.WORK):
        text = text.replace(path, str(tmp / path.strip("/")))
    fake = f"pgbackrest() {{ echo '{info}'; }}; "
    return subprocess.run(["bash", "-c", fake + text], env={"CLONE_SOURCE": SOURCE_NAME, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)


def _repository(root: Path) -> None:
    (root / "backup/multigres/20260501-110000F").mkdir(parents=True)
    (root / "backup/multigres/backup.info").write_text("listed")
    (root / "backup/multigres/backup.info.copy").write_text("listed")
    (root / "backup/multigres/20260501-110000F/backup.manifest").write_text("m")
    (root / "archive/multigres/17-1").mkdir(parents=True)
    (root / "archive/multigres/17-1/000000010000000000000001-abc.gz").write_text("wal")
    (root / "archive/multigres/17-1/000000010000000000000002-abc.gz.pgbackrest.tmp").write_text("partial")


@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("bash") is None, reason="needs bash and tar")
def test_the_script_copies_all_but_temporary_files_and_refuses_a_used_volume(tmp_path: Path) -> None:
    for d in ("clone-source", "clone-target", "clone-work"):
        (tmp_path / d).mkdir()
    _repository(tmp_path / "clone-source")
    (tmp_path / "clone-source/lost+found").mkdir()
    (tmp_path / "clone-target").chmod(0o777)  # a provisioner's directory: writable, not ours to chmod
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "clone-target/lost+found").exists()
    assert "newest backup 20260501-110000F" in done.stdout
    target = tmp_path / "clone-target"
    assert (target / "archive/multigres/17-1/000000010000000000000001-abc.gz").read_text() == "wal"
    assert not list(target.rglob("*.pgbackrest.tmp")) and (target / clone.MARKER).read_text() == SOURCE_NAME
    assert (target / "backup/multigres/backup.info").read_text() == "listed"
    assert _run(tmp_path).returncode == 0  # an attempt again over its own copy
    (target / clone.MARKER).write_text("db/another")
    used = _run(tmp_path)
    assert used.returncode == clone.EXIT_TARGET_USED and "holds" in used.stderr
    assert _run(tmp_path, info='{"backup":[]}').returncode == clone.EXIT_TARGET_USED
    (target / clone.MARKER).write_text(SOURCE_NAME)
    assert _run(tmp_path, info='{"backup":[]}').returncode == clone.EXIT_NO_BACKUP
    shutil.rmtree(tmp_path / "clone-source/backup")
    assert _run(tmp_path).returncode == clone.EXIT_NO_SOURCE
