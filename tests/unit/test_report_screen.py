"""The incident screen's pure half: what it says is blocked, and how it prints an unknown sync view."""

from __future__ import annotations

import json

from multigres_pools.report import PodRow, Report, as_json, text


def _report(**kw: object) -> Report:
    base = dict(shard="play", namespace="play", version="v0.1.0", generation=3, observed_generation=2,
                phase="Degraded", conditions=[("Ready", "False", "Refused", "storage below the grown PVC"),
                                              ("Stalled", "True", "Refused", "")],
                pods=[PodRow("play-0", "default", "zone1", "0", "Running", True, "PRIMARY", "", "", 0, None),
                      PodRow("play-1", "default", "zone1", "1", "Running", True, "REPLICA", "requested",
                             "last-sync-standby", 2, None)])
    base.update(kw)
    return Report(**base)  # type: ignore[arg-type]


def test_blocked_names_conditions_drains_and_the_data_plane():
    report = _report(data_plane_error="topology-unavailable: etcd did not answer")
    assert report.blocked == ["Ready: storage below the grown PVC", "Stalled: Refused",
                              "pod play-1: drain requested blocked: last-sync-standby",
                              "data plane: topology-unavailable: etcd did not answer"]


def test_text_marks_an_unknown_sync_view_and_json_carries_blocked():
    screen = text(_report())
    row = next(line for line in screen.splitlines() if "play-1" in line and "REPLICA" in line)
    assert " ? " in row and "requested" in row
    assert "generation 3, observed 2" in screen
    body = json.loads(as_json(_report()))
    assert body["blocked"][0].startswith("Ready:") and body["pods"][1]["in_sync_set"] is None


def test_nothing_blocked_is_said_plainly():
    healthy = _report(conditions=[("Ready", "True", "Ready", "")],
                      pods=[PodRow("play-0", "default", "zone1", "0", "Running", True, "PRIMARY", "", "", 0, True)],
                      primary="play-0", synchronous_standby_names=["zone1_p-1"])
    assert healthy.blocked == [] and "blocked: nothing" in text(healthy)


def test_pause_windows_and_decommission_are_on_the_screen():
    """Day-2 state an operator must see during an incident (issue 16): a pause, a disruption waiting for
    its maintenance window, a pod listed for decommission, a decommission entry naming no pod."""
    report = _report(
        conditions=[("Ready", "False", "Progressing", "2/3 pods ready"),
                    ("Paused", "True", "Paused", "annotation pools.multigres.com/paused: 1 write held back"),
                    ("WaitingForMaintenanceWindow", "True", "OutsideMaintenanceWindow", "rolling update until 02:00"),
                    ("DecommissionValid", "False", "UnknownPod", "spec.pools.default.decommission: 'x' ignored"),
                    ("RollingUpdate", "True", "PodsDrifted", "1/3 updated")],
        decommission=["play-0", "play-9"])
    assert report.blocked == ["Ready: 2/3 pods ready",
                              "Paused: annotation pools.multigres.com/paused: 1 write held back",
                              "WaitingForMaintenanceWindow: rolling update until 02:00",
                              "DecommissionValid: spec.pools.default.decommission: 'x' ignored",
                              "pod play-1: drain requested blocked: last-sync-standby",
                              "pod play-0: listed for decommission, waiting for its replacement and drain"]
    row = next(line for line in text(report).splitlines() if "play-0" in line and "PRIMARY" in line)
    assert "decommission" in row


def test_fencing_is_on_the_screen() -> None:
    """A fenced pod reads `fenced` in the DRAIN column; Fenced and FenceRefused are listed as blocked."""
    fenced = PodRow("play-2", "default", "zone1", "2", "Running", True, "REPLICA", "", "", 0, False, fenced=True)
    report = _report(
        conditions=[("Fenced", "True", "PodsFenced", "fenced (out of the synchronous set, still running): play-2"),
                    ("FenceRefused", "True", "IsPrimary", "play-0: it is the primary: nothing changed")],
        pods=[*_report().pods, fenced])
    assert report.blocked[:2] == ["Fenced: fenced (out of the synchronous set, still running): play-2",
                                  "FenceRefused: play-0: it is the primary: nothing changed"]
    row = next(line for line in text(report).splitlines() if "play-2" in line and "REPLICA" in line)
    assert " no " in row and "fenced" in row


def test_backups_on_the_screen_running_last_waiting_and_failures() -> None:
    """status.backup (the agent's bookkeeping): the running and last backups get a line each; a backup
    that waits and a last one that failed are listed as blocked."""
    running = {"type": "full", "trigger": "schedule", "pod": "play-1", "jobId": "j2",
               "startedAt": "2026-11-24T01:00:02Z"}
    last = {"type": "differential", "trigger": "request", "pod": "play-0", "forcePrimary": True, "jobId": "j1",
            "startedAt": "2026-11-23T01:00:02Z", "finishedAt": "2026-11-23T01:00:09Z",
            "error": "cannot backup from replica"}
    report = _report(conditions=[], backup={"running": running, "last": last,
                                            "waiting": "full backup waits: pod play-1 is draining"})
    assert report.blocked[-2:] == ["backup: full backup waits: pod play-1 is draining",
                                   "last backup failed: cannot backup from replica"]
    screen = text(report)
    assert "backup running: full by schedule on play-1, started 2026-11-24T01:00:02Z" in screen
    assert ("backup last: differential by request on play-0 (primary, forced), started 2026-11-23T01:00:02Z, "
            "finished 2026-11-23T01:00:09Z: FAILED: cannot backup from replica") in screen
    ok = dict(last, error=None, forcePrimary=False, backupId="20261123-010003F", sizeBytes=24117248)
    clean = _report(conditions=[], backup={"last": ok})
    assert clean.blocked == ["pod play-1: drain requested blocked: last-sync-standby"]
    screen = text(clean)
    assert "differential by request on play-0, started" in screen and ": 20261123-010003F (23.0 MiB)" in screen
    assert json.loads(as_json(clean))["backup"]["last"]["backupId"] == "20261123-010003F"


def test_stuck_pods_are_on_the_screen() -> None:
    """PodsStuck=True is listed as blocked with its message (pod, container, reason); False is not."""
    message = ('play-1: init container postgres waiting: ImagePullBackOff '
               '(Back-off pulling image "registry.invalid/pgctld:v9")')
    report = _report(conditions=[("PodsStuck", "True", "ImagePullBackOff", message)])
    assert report.blocked[0] == f"PodsStuck: {message}"
    assert f"PodsStuck: {message}" in text(report)
    quiet = _report(conditions=[("PodsStuck", "False", "NoPodStuck", "")])
    assert not any(b.startswith("PodsStuck") for b in quiet.blocked)


def test_an_unreachable_api_server_is_one_line_naming_it_not_a_traceback(tmp_path, capsys):
    """The usual state after `localstack down` with an old KUBECONFIG: refused, or a host that is gone."""
    import socket

    from multigres_pools import report

    with socket.socket() as closed:  # a port nothing listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        for server in (f"https://127.0.0.1:{port}", "https://no-such-host.invalid:6443"):
            config = tmp_path / "kubeconfig"
            config.write_text(json.dumps({
                "apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
            assert report.main(["play", "-n", "play", "--kubeconfig", str(config)]) == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"cannot reach the API server {server}: " in err, err


def test_the_durability_policy_is_words_on_screen_and_typed_in_json():
    from multigres_pools.dataplane.base import Durability

    report = _report(primary="play-0", cohort=["zone1_p-0", "zone1_p-1"], durability=Durability(2))
    assert "durability: at least 2 poolers" in text(report) and "Durability(" not in text(report)
    assert json.loads(as_json(report))["durability"] == {"required": 2, "multi_cell": False}
    assert "at least 2 cells" in text(_report(primary="play-0", cohort=["a"], durability=Durability(2, True)))
