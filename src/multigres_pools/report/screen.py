"""The status screen, pure: a report in, text out (wrapped to `width`, coloured by `paint`).

    print(render(report, width=100))

The headline says Healthy or what is wrong; then the pods, replication, backups and everything that
needs attention, each message in full.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable

from . import units, verdict
from .colour import PLAIN, Paint
from .layout import INDENT, Cell, field, table, table_width, wrap
from .model import BackupRun, Clone, Drill, PodRow, Report, Sync

STATE_STYLE = {verdict.HEALTHY: "good", verdict.RECONCILING: "warn", verdict.PAUSED: "warn",
               verdict.WARNING: "warn", verdict.DEGRADED: "bad", verdict.UNKNOWN: "bad"}
SYNC_STYLE = {Sync.PRIMARY: "bold", Sync.SYNC: "good", Sync.DETACHED: "bad", Sync.COHORT: "warn",
              Sync.ASYNC: "warn", Sync.NO: "warn", Sync.UNKNOWN: "warn"}
# Multigres v0.1.0 publishes no archiver state (pgBackRest's archive-push runs inside PostgreSQL and
# reports to no RPC the agent can call), so this line says so rather than guessing.
WAL_ARCHIVING = "not reported by Multigres v0.1.0 (`pgbackrest info` in a pool pod lists the archived WAL)"
ABBREVIATION = "…"


def render(report: Report, *, width: int = 100, paint: Paint = PLAIN) -> str:
    judged = verdict.judge(report)
    head = wrap(judged.headline(report), width, hang=INDENT)
    lead = f"{report.namespace}/{report.shard}: "
    if head[0].startswith(lead + judged.state):
        head[0] = lead + paint(STATE_STYLE[judged.state], judged.state) + head[0][len(lead) + len(judged.state):]
    observed = "" if report.observed_generation == report.generation else f" (observed {report.observed_generation})"
    lines = [*head, *wrap(f"MultigresShard {report.namespace}/{report.shard} · Multigres {report.version} · "
                          f"phase {report.phase or '-'} · generation {report.generation}{observed}", width), ""]
    if report.clone is not None:
        lines[-1:-1] = field("clone", _clone(report.clone, report.observed_at), width)
    show, legend = _short_names(report, width)
    lines += [*_pods(report, show, paint), *legend, ""]
    lines += [paint("bold", "Replication"), *_replication(report, show, width, paint)]
    lines += [paint("bold", "Backups"), *_backups(report, show, width), ""]
    needs = verdict.attention(report)
    if not needs:
        return "\n".join([*lines, paint("bold", "Needs attention") + ": " + paint("good", "nothing")]) + "\n"
    lines.append(paint("bold", "Needs attention"))
    for item in needs:
        lines += [paint("warn", x) for x in wrap(f"- {item}", width, indent=INDENT, hang=INDENT + "  ")]
    return "\n".join(lines) + "\n"


Show = Callable[[str], str]


def _short_names(report: Report, width: int) -> tuple[Show, list[str]]:
    """Pod names share a long prefix (cluster, database, table group, shard, pool, cell, hash): when the
    pod table would not fit, the prefix is shown once, as `…`, in the table and the sections below it.
    Messages (headline, Needs attention) keep whole names, to be copied."""
    parts = [p.name.split("-") for p in report.pods]
    shared = list(itertools.takewhile(lambda column: len(set(column)) == 1, zip(*parts, strict=False)))
    prefix = "-".join(column[0] for column in shared[:min(map(len, parts), default=1) - 1])
    header, rows = _table(report, str)
    if len(report.pods) < 2 or len(prefix) < 10 or table_width(header, rows) <= width:
        return str, []

    def show(name: str) -> str:
        return ABBREVIATION + name[len(prefix):] if name.startswith(prefix) else name

    return show, wrap(f"{ABBREVIATION} = {prefix}", width, indent=INDENT, hang=INDENT + "  ")


def _table(report: Report, show: Show) -> tuple[list[str], list[list[Cell]]]:
    places = len({(p.pool, p.cell) for p in report.pods}) > 1
    header = ["POD", *(["POOL/CELL"] if places else []), "ROLE", "READY", "LSN", "LAG", "SYNC", "NODE", "STATE",
              "RESTARTS", "AGE"]
    return header, [_row(p, show(p.name), places, report) for p in report.pods]


def _pods(report: Report, show: Show, paint: Paint) -> list[str]:
    if not report.pods:
        return [f"{INDENT}no pool pods"]
    return table(*_table(report, show), paint)


def _row(pod: PodRow, shown: str, places: bool, report: Report) -> list[Cell]:
    lag = "-" if pod.lag_bytes is None else units.size(pod.lag_bytes)
    state = pod.state + (" (blocked)" if pod.blocked else "")
    return [(shown, ""), *([(f"{pod.pool}/{pod.cell}", "")] if places else []), (pod.role.lower() or "-", ""),
            ("yes" if pod.ready else "no", "good" if pod.ready else "bad"), (pod.lsn or "-", ""), (lag, ""),
            ("?" if pod.sync is Sync.UNKNOWN else pod.sync.value, SYNC_STYLE[pod.sync]), (pod.node or "-", ""),
            (state, "bad" if pod.blocked else "" if state == "-" else "warn"),
            (str(pod.restarts), "warn" if pod.restarts else ""), (units.age(pod.created, report.observed_at), "")]


def _pods_of(report: Report, poolers: list[str], show: Show) -> str:
    return ", ".join(sorted(show(report.pod_of(p)) for p in poolers)) or "none"


def _replication(report: Report, show: Show, width: int, paint: Paint) -> list[str]:
    rep = report.replication
    if not report.data_plane.reached:
        return field("primary", "unknown: the data plane did not answer from here", width, paint, "warn")
    if rep.primary is None:
        named = f"; the newest consensus rule names {show(rep.named_leader)}" if rep.named_leader else ""
        return field("primary", f"none confirmed{named}", width, paint, "bad")
    lines = field("primary", f"{show(rep.primary)} (confirmed by consensus)", width)
    lines += field("synchronous", _pods_of(report, rep.synchronous, show), width)
    if rep.cohort:
        lines += field("cohort", _pods_of(report, rep.cohort, show), width)
    if rep.durability is not None:
        met = "" if rep.durable is not False else " (not met: commits wait)"
        lines += field("durability", verdict.durability_words(rep.durability.required, rep.durability.multi_cell)
                       + met, width, paint, "bad" if met else "")
    return lines


def _backup_run(run: BackupRun, report: Report, show: Show = str) -> str:
    """`full by schedule on pod-1, finished 2026-11-24T01:00:11Z (3h ago): 20261124-010003F (23.0 MiB)`."""
    where = show(run.pod) + (" (the primary: no standby qualified)" if run.force_primary else "")
    line = f"{run.type} by {run.trigger} on {where}"
    stamp = run.finished or run.started
    if stamp:
        line += f", {'finished' if run.finished else 'started'} {units.when(stamp, report.observed_at)}"
    if run.backup_id:
        line += f": {run.backup_id}"
    if run.size_bytes is not None:
        line += f" ({units.size(run.size_bytes)})"
    return line + (f": FAILED: {run.error}" if run.error else "")


def _drill(drill: Drill, now: dt.datetime) -> str:
    """`Verified 20261128-070353F (request), 2026-11-28T07:04:04Z (2h ago)` or `FAILED (QueryFailed) ...: why`."""
    what = f"{drill.backup_id or 'no backup'} ({drill.trigger})"
    if not drill.result:
        return f"restoring {what} since {units.when(drill.started, now)}" if drill.started else f"restoring {what}"
    when = f", {units.when(drill.finished, now)}" if drill.finished else ""
    if drill.result == "Verified":
        return f"Verified {what}{when}"
    return f"FAILED ({drill.reason}) {what}{when}: {drill.message}"


def _clone(clone: Clone, now: dt.datetime) -> str:
    if clone.state == "Cloned":
        when = f" {units.when(clone.elected, now)}" if clone.elected else ""
        term = f", term {clone.term}" if clone.term is not None else ""
        return f"of {clone.source}: cloned{when}; {clone.leader or 'a primary'} was its first primary{term}"
    return f"of {clone.source}: {clone.state} — {clone.message}"


def _backups(report: Report, show: Show, width: int) -> list[str]:
    b, now = report.backups, report.observed_at
    lines = field("running", _backup_run(b.running, report, show) if b.running else "none", width)
    if b.last:
        lines += field("last run", _backup_run(b.last, report, show), width)
    if b.newest_complete_at:
        lines += field("newest complete", f"{b.newest_complete_type or 'backup'}, finished "
                                          f"{units.when(b.newest_complete_at, now)}", width)
    if b.next_at:
        lines += field("next scheduled", f"{b.next_type} at {units.when(b.next_at, now)}", width)
    if b.drill_running:
        lines += field("restore drill", _drill(b.drill_running, now), width)
    if b.drill_last:
        lines += field("last drill", _drill(b.drill_last, now), width)
        if b.drill_last.result != "Verified":
            lines += field("last verified", units.when(b.last_verified, now) if b.last_verified else "never", width)
    unknown = b.repository_error or ("the data plane did not answer from here" if not report.data_plane.reached
                                     else "" if report.replication.primary else "no confirmed primary to ask")
    if unknown:
        lines += field("in repository", f"unknown: {unknown}", width) + field("first recoverable", "unknown", width)
    else:
        listed = "; ".join(f"{r.id} {r.type}" + ("" if r.complete else " INCOMPLETE") for r in b.repository)
        if b.repository_total > len(b.repository):
            listed = f"{b.repository_total} backups, the newest: {listed}"
        lines += field("in repository", listed or "none", width)
        first = b.first_recoverable
        lines += field("first recoverable", (f"end of {first.id}" + (f" (LSN {first.final_lsn})" if first.final_lsn
                                                                     else "")) if first else "none", width)
    return lines + field("WAL archiving", WAL_ARCHIVING, width)
