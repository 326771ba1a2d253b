"""The status screen is a pure function of the report: healthy, a scale-down draining a standby, no
primary, and a data plane that does not answer, each read as an operator reads it."""

from __future__ import annotations

import re

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.report import screen
from multigres_pools.report.colour import Paint

from . import fixtures as f
from .fixtures import name

WIDE = 220  # nothing abbreviated, nothing wrapped but the longest messages


def row(text: str, pod: str) -> list[str]:
    """The pod table's cells of `pod` (columns are separated by two blanks or more)."""
    line = next(x for x in text.splitlines() if x.strip().startswith(pod + " "))
    return re.split(r"\s{2,}", line.strip())


def section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def test_healthy_says_so_in_words_and_lists_no_condition() -> None:
    text = screen.render(f.healthy(), width=WIDE)
    assert text.splitlines()[0] == f"play/play: Healthy — 3/3 pods serving, primary {name(0)}"
    assert row(text, name(0)) == [name(0), "primary", "yes", "0/5000060", "-", "primary", "node-a", "-", "0", "3h"]
    assert row(text, name(2)) == [name(2), "replica", "yes", "0/5000000", "96 B", "sync", "node-a", "-", "0", "3h"]
    assert text.rstrip().endswith("Needs attention: nothing")
    assert not any(c.value in text for c in keys.ShardCondition)  # all 18 are fine: none is shown
    assert section(text, "Replication") == [
        f"  primary            {name(0)} (confirmed by consensus)",
        f"  synchronous        {name(1)}, {name(2)}",
        f"  cohort             {name(0)}, {name(1)}, {name(2)}",
        "  durability         at least 2 poolers, the primary included"]
    backups = "\n".join(section(text, "Backups"))
    assert "next scheduled     differential at 2026-11-25T01:00:00Z (in 21h)" in backups
    assert "first recoverable  end of 20261117-010002F (LSN 0/3000100)" in backups
    assert "in repository      20261117-010002F full; 20261124-010003F full" in backups
    assert "WAL archiving      not reported by Multigres v0.1.0" in backups
    assert "(" + "required" not in text and "Durability(" not in text and "datetime" not in text


def test_a_scale_down_reads_reconciling_with_the_draining_pod() -> None:
    text = screen.render(f.draining(), width=WIDE)
    assert text.splitlines()[0] == f"play/play: Reconciling — draining {name(2)} (scale-down)"
    cells = row(text, name(2))
    assert cells[2:] == ["no", "0/6FFFF00", "256 B", "async", "node-a", "draining (scale-down)", "0", "3h"]
    # Ready=False and Available=False only restate "2/3 pods ready" while the drain goes on.
    assert text.rstrip().endswith("Needs attention: nothing")


def test_no_primary_is_degraded_and_names_the_pooler_that_does_not_answer() -> None:
    text = screen.render(f.no_primary(), width=WIDE)
    assert text.splitlines()[0].startswith("play/play: Degraded — PodsStuck: ")
    assert text.splitlines()[0].endswith("; no confirmed primary")
    assert [row(text, name(i))[5] for i in range(3)] == ["?", "?", "?"]
    assert section(text, "Replication") == [f"  primary            none confirmed; the newest consensus rule names "
                                            f"{name(0)}"]
    needs = section(text, "Needs attention")
    assert needs[0].startswith(f"  - PodsStuck: {name(0)}: container postgres waiting: CrashLoopBackOff")
    assert needs[1] == (f"  - pooler {name(0)} at 10.244.0.11:15270 did not answer: UNAVAILABLE: failed to connect "
                        "to all addresses; last error: connect: Connection refused")
    assert needs[2].startswith(f"  - no confirmed primary: the newest consensus rule names {name(0)}")
    assert "in repository      unknown: no confirmed primary to ask" in text


def test_an_unreachable_data_plane_names_each_address_and_what_to_try() -> None:
    text = screen.render(f.unreachable(), width=WIDE)
    assert text.splitlines()[0] == "play/play: Unknown — the data plane did not answer from here (see Needs attention)"
    attention = " ".join(x.strip() for x in section(text, "Needs attention"))
    for i in range(3):
        assert f"{name(i)} at {f.address(i)}: DEADLINE_EXCEEDED" in attention
    assert attention.endswith("— the pod IPs are not reachable from here: run it on a node or in a pod of the cluster")
    assert all(row(text, name(i))[3:6] == ["-", "-", "?"] for i in range(3))
    # Without --dial-pod-ips the hint offers it.
    resolved = screen.render(f.build(f.shard(), [f.pod(0, "PRIMARY")], f.answers(1, None, {}, failed={0: "x"})))
    assert "try --dial-pod-ips" in resolved


def test_long_messages_wrap_to_the_width_and_nothing_is_cut() -> None:
    report = f.no_primary()
    text = screen.render(report, width=70)
    table = {i for i, line in enumerate(text.splitlines()) if line.startswith("  POD") or "…-" in line[:8]}
    assert all(len(line) <= 70 for i, line in enumerate(text.splitlines()) if i not in table)
    flat = " ".join(text.split())
    stuck = report.condition("PodsStuck")
    assert stuck is not None and " ".join(stuck.message.split()) in flat
    assert "Connection refused" in flat and "…" not in flat.replace("… =", "").replace("…-", "")


def test_long_pod_names_are_shown_once_when_the_table_would_not_fit() -> None:
    text = screen.render(f.healthy(), width=100)
    assert row(text, "…-1")[:3] == ["…-1", "replica", "yes"]
    assert f"  … = {f.BASE}" in text.splitlines()
    assert "  primary            …-0 (confirmed by consensus)" in text.splitlines()
    assert name(0) in text.splitlines()[0] + text.splitlines()[1]  # the headline keeps the whole name
    assert "…" not in screen.render(f.healthy(), width=WIDE)


def test_colour_only_adds_escape_codes() -> None:
    report = f.no_primary()
    coloured = screen.render(report, width=100, paint=Paint(True))
    assert coloured.startswith("play/play: \x1b[31mDegraded\x1b[0m — ")
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == screen.render(report, width=100)
    assert "\x1b[" not in screen.render(report, width=100)


def test_drains_blocked_fenced_decommissioned_and_terminating_pods() -> None:
    blocked = {keys.ANN_DRAIN_STATE: "requested", keys.ANN_DRAIN_REASON: "rolling-update",
               keys.ANN_DRAIN_BLOCKED: "last-sync-standby"}
    cr = f.shard("Progressing", "rolling update", Paused=("True", "Paused", "annotation pools.multigres.com/paused: "
                                                          "1 write held back"))
    cr["spec"]["pools"]["default"]["decommission"] = [name(2)]
    pods = [f.pod(0, "PRIMARY"), f.pod(1, annotations=blocked), f.pod(2, fenced=True), f.pod(3, terminating=True)]
    text = screen.render(f.build(cr, pods, f.answers(4, 0, {}, standbys=(2,), connected=(2,))), width=WIDE)
    assert text.splitlines()[0] == ("play/play: Paused — annotation pools.multigres.com/paused: 1 write held back")
    assert row(text, name(1))[7] == "requested (rolling-update) (blocked)"
    assert row(text, name(2))[7] == "decommission" and row(text, name(3))[7] == "terminating"
    needs = section(text, "Needs attention")
    assert f"  - pod {name(1)}: drain requested blocked: last-sync-standby" in needs
    assert f"  - pod {name(2)}: listed for decommission, waiting for its replacement and drain" in needs
    fenced = screen.render(f.build(f.shard(), [f.pod(0, "PRIMARY"), f.pod(1, fenced=True)],
                                   f.answers(2, 0, {})), width=WIDE)
    assert row(fenced, name(1))[7] == "fenced"


def test_backups_running_failed_and_waiting() -> None:
    cr = f.shard()
    cr["status"]["backup"] = {
        "running": {"type": "differential", "trigger": "request", "pod": name(1), "jobId": "j9",
                    "startedAt": "2026-11-24T03:58:00Z"},
        "last": {"type": "full", "trigger": "schedule", "pod": name(0), "forcePrimary": True, "jobId": "j8",
                 "startedAt": "2026-11-24T01:00:02Z", "finishedAt": "2026-11-24T01:00:09Z",
                 "error": "cannot backup from replica"},
        "waiting": "full backup waits: pod x is draining"}
    found = f.answers(2, 0, {}, standbys=(1,), connected=(1,))
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    assert (f"  running            differential by request on {name(1)}, started 2026-11-24T03:58:00Z (2m ago)"
            in text.splitlines())
    assert (f"  last run           full by schedule on {name(0)} (the primary: no standby qualified), finished "
            "2026-11-24T01:00:09Z (2h ago): FAILED: cannot backup from replica") in text.splitlines()
    assert section(text, "Needs attention")[-2:] == ["  - backup: full backup waits: pod x is draining",
                                                     "  - last backup failed: cannot backup from replica"]
    assert text.splitlines()[0].startswith("play/play: Warning — backup: full backup waits")


def test_restore_drills_show_the_last_result_and_a_failure_needs_attention() -> None:
    cr = f.shard()
    last = {"trigger": "schedule", "backupId": "20261124-010003F", "startedAt": "2026-11-24T03:00:01Z",
            "finishedAt": "2026-11-24T03:00:40Z", "result": "Failed", "reason": "QueryFailed",
            "message": 'the query failed on the restored server: relation "orders" does not exist'}
    cr["status"]["backup"] = {"drill": {"last": last, "running": {"trigger": "request", "backupId": "20261124-010003F",
                                                                  "startedAt": "2026-11-24T03:59:00Z"}},
                              "lastVerified": "2026-11-23T03:00:35Z"}
    cr["status"]["conditions"].append({"type": keys.ShardCondition.BACKUP_VERIFIED, "status": "False",
                                       "reason": "QueryFailed", "message": "restore drill of backup 20261124-010003F"})
    found = f.answers(2, 0, {}, standbys=(1,), connected=(1,))
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    backups = section(text, "Backups")
    assert "  restore drill      restoring 20261124-010003F (request) since 2026-11-24T03:59:00Z (60s ago)" in backups
    assert ('  last drill         FAILED (QueryFailed) 20261124-010003F (schedule), 2026-11-24T03:00:40Z (59m ago): '
            'the query failed on the restored server: relation "orders" does not exist') in backups
    assert "  last verified      2026-11-23T03:00:35Z (24h ago)" in backups
    assert any("BackupVerified" in line for line in section(text, "Needs attention"))
    cr["status"]["backup"] = {"drill": {"last": {**last, "result": "Verified", "reason": "Verified"}}}
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    assert "  last drill         Verified 20261124-010003F (schedule), 2026-11-24T03:00:40Z (59m ago)" in text
    assert "last verified" not in text


def test_a_clone_shows_its_source_and_step_and_a_failed_copy_needs_attention() -> None:
    cr = f.shard()
    found = f.answers(2, 0, {}, standbys=(1,), connected=(1,))
    cr["status"]["clone"] = {"source": "play/orders", "state": "Restoring",
                             "message": "the poolers replay the copied WAL archive"}
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    assert "  clone              of play/orders: Restoring — the poolers replay the copied WAL archive" in text
    cr["status"]["clone"] = {"source": "play/orders", "state": "Failed",
                             "message": "TargetNotEmpty: this shard's backup volume holds archive"}
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    assert ("  - clone of play/orders: the copy of its repository failed (tried again): TargetNotEmpty: this "
            "shard's backup volume holds archive") in section(text, "Needs attention")
    cr["status"]["clone"] = {"source": "play/orders", "state": "Cloned", "leader": "zone1_p-02d4503b", "term": 2,
                             "electedAt": "2026-11-24T03:00:00Z"}
    text = screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
    assert ("  clone              of play/orders: cloned 2026-11-24T03:00:00Z (60m ago); zone1_p-02d4503b was its "
            "first primary, term 2") in text
    del cr["status"]["clone"]
    assert "clone" not in screen.render(f.build(cr, [f.pod(0, "PRIMARY"), f.pod(1)], found), width=WIDE)
