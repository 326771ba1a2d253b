"""`multigres-pools status SHARD`: the one screen an operator reads during an incident.

    multigres-pools status play -n play                 # pools, pods, roles, drains, the sync set, backups
    multigres-pools status play -n play -o json         # the same for scripts

It reads the MultigresShard and its pods from the API server, and asks the data plane (the topology
etcd and the primary's pooler, with the adapter the shard declares) what the agent would see: the
confirmed primary, its synchronous set and cohort, and the last backups. What cannot be reached is
reported as such, never guessed. `--dial-pod-ips` dials poolers at their pod IPs (from outside the
cluster network, e.g. the playground), instead of their registered hostnames.

`gather()` does the I/O; `text()` and `as_json()` are pure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from ansible_collections.multigres.pools.plugins.module_utils import facts, keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import KubeClient, KubeError, connect

from . import cli_help, dataplane
from .agent import podinfo
from .dataplane.base import DataPlaneError, Durability
from .podaddress import pod_address, pod_address_unless_resolvable

Obj = dict[str, Any]
BACKUPS_SHOWN = 5
# Keyed by ShardCondition (a StrEnum), so the plain type string a status carries finds its entry.
_ATTENTION = cast(Mapping[str, str], keys.SHARD_CONDITION_ATTENTION)


# Shard (and pod) conditions that say something is stuck while True.
@dataclass
class PodRow:
    name: str
    pool: str
    cell: str
    index: str
    phase: str
    ready: bool
    role: str
    drain: str
    blocked: str
    restarts: int
    in_sync_set: bool | None  # None: the primary's view is unknown
    fenced: bool = False  # the agent's pod condition Fenced is True


@dataclass
class Report:
    shard: str
    namespace: str
    version: str
    generation: int
    observed_generation: int | None
    phase: str
    conditions: list[tuple[str, str, str, str]]  # type, status, reason, message
    pods: list[PodRow]
    primary: str | None = None
    synchronous_standby_names: list[str] = field(default_factory=list)
    cohort: list[str] = field(default_factory=list)
    durability: Durability | None = None  # the cohort's policy, as the primary reports it
    backups: list[tuple[str, str, bool]] = field(default_factory=list)  # id, type, complete
    data_plane_error: str = ""
    decommission: list[str] = field(default_factory=list)  # pods listed in spec.pools.<pool>.decommission
    backup: dict[str, Any] = field(default_factory=dict)  # status.backup: running, last, waiting (the agent's)

    @property
    def blocked(self) -> list[str]:
        """Everything that waits, and why: unhealthy conditions and blocked drains."""
        out = [f"{c[0]}: {c[3] or c[2]}" for c in self.conditions
               if _ATTENTION.get(c[0]) == c[1]]
        out += [f"pod {p.name}: drain {p.drain} blocked: {p.blocked}" for p in self.pods if p.blocked]
        present = {p.name for p in self.pods}
        out += [f"pod {name}: listed for decommission, waiting for its replacement and drain"
                for name in self.decommission if name in present]
        if self.backup.get("waiting"):
            out.append(f"backup: {self.backup['waiting']}")
        if (self.backup.get("last") or {}).get("error"):
            out.append(f"last backup failed: {self.backup['last']['error']}")
        if self.data_plane_error:
            out.append(f"data plane: {self.data_plane_error}")
        return out


def _restarts(pod: Obj) -> int:
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def _pod_row(pod: Obj, sync_ids: set[str] | None) -> PodRow:
    labels, annotations = facts.labels(pod), facts.annotations(pod)
    top = podinfo.pod_topology(pod)
    app_name = f"{top.cell}_{top.service_id}" if top else ""
    return PodRow(
        name=facts.name(pod), pool=labels.get(keys.LABEL_POOL, ""), cell=labels.get(keys.LABEL_CELL, ""),
        index=labels.get(keys.LABEL_INDEX, ""), phase=(pod.get("status") or {}).get("phase") or "Pending",
        ready=facts.condition_true(pod, "Ready") and not facts.meta(pod).get("deletionTimestamp"),
        role=labels.get(keys.LABEL_ROLE, ""), drain=annotations.get(keys.ANN_DRAIN_STATE, ""),
        blocked=annotations.get(keys.ANN_DRAIN_BLOCKED, ""), restarts=_restarts(pod),
        in_sync_set=None if sync_ids is None else app_name in sync_ids,
        fenced=facts.condition_true(pod, keys.POD_CONDITION_FENCED))


def _data_plane(cr: Obj, pods: list[Obj], dial_host: Callable[[str], str] | None,
                rpc_timeout: float) -> dict[str, Any]:
    """What the confirmed primary says; raises DataPlaneError/ValueError when it cannot be asked."""
    version = ((cr.get("spec") or {}).get("multigres") or {}).get("version") or keys.DEFAULT_MULTIGRES_VERSION
    tops = [t for t in (podinfo.pod_topology(p) for p in pods) if t]
    topo = podinfo.cr_topology(cr) or (podinfo.shard_topology(tops) if tops else None)
    if topo is None:
        raise ValueError("no topology address in the spec and no pool pod to read it from")
    plane = dataplane.for_version(version, rpc_timeout=rpc_timeout, dial_host=dial_host)
    try:
        poolers = plane.list_poolers(topo)
        leader = plane.leader(poolers)
        if leader is None:
            return {"primary": None}
        sync = plane.sync_replication(leader)
        found: dict[str, Any] = {
            "primary": leader.hostname.split(".")[0] or str(leader.id),
            "standbys": sorted(f"{p.cell}_{p.name}" for p in sync.standbys),
            "cohort": sorted(f"{p.cell}_{p.name}" for p in sync.cohort),
            "durability": sync.durability,
        }
        try:
            found["backups"] = [(b.backup_id, b.type, b.complete)
                                for b in plane.get_backups(leader, 100)][-BACKUPS_SHOWN:]
        except DataPlaneError as exc:
            found["backups_error"] = exc.message
        return found
    finally:
        plane.close()


def gather(kube: KubeClient, namespace: str, shard: str, dial_host: Callable[[str], str] | None = None,
           rpc_timeout: float = 5.0) -> Report:
    cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, shard)
    if cr is None:
        raise LookupError(f"no MultigresShard {namespace}/{shard}")
    status = cr.get("status") or {}
    pods = [p for p in kube.list("v1", "Pod", namespace, f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}")
            if facts.labels(p).get(keys.LABEL_APP_INSTANCE) == (cr.get("spec") or {}).get("clusterName")
            or podinfo.pod_topology(p) is not None]
    report = Report(
        shard=shard, namespace=namespace,
        version=((cr.get("spec") or {}).get("multigres") or {}).get("version") or keys.DEFAULT_MULTIGRES_VERSION,
        generation=int(facts.meta(cr).get("generation") or 0), observed_generation=status.get("observedGeneration"),
        phase=status.get("phase") or "", pods=[],
        conditions=[(c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""))
                    for c in status.get("conditions") or []],
        decommission=sorted(podinfo.cr_pod_list(cr, "decommission")),
        backup=dict(status.get("backup") or {}))
    sync_ids: set[str] | None = None
    try:
        seen = _data_plane(cr, pods, dial_host, rpc_timeout)
        report.primary = seen.get("primary")
        report.synchronous_standby_names = seen.get("standbys", [])
        report.cohort = seen.get("cohort", [])
        report.durability = seen.get("durability")
        report.backups = seen.get("backups", [])
        if "backups_error" in seen:
            report.data_plane_error = f"backups: {seen['backups_error']}"
        if report.primary is None:
            report.data_plane_error = "no confirmed primary (failover in progress, or the shard is not bootstrapped)"
        else:
            sync_ids = set(report.synchronous_standby_names) | set(report.cohort)
    except (DataPlaneError, ValueError) as exc:
        report.data_plane_error = getattr(exc, "message", str(exc))
    report.pods = sorted((_pod_row(p, sync_ids) for p in pods), key=lambda r: (r.pool, r.cell, r.name))
    return report


def text(report: Report) -> str:
    """The incident screen; plain text, fixed columns, no colour (it goes into tickets too)."""
    gen = f"generation {report.generation}, observed {report.observed_generation}"
    lines = [f"MultigresShard {report.namespace}/{report.shard}  Multigres {report.version}  "
             f"phase {report.phase or '-'}  ({gen})"]
    for ctype, cstatus, reason, message in report.conditions:
        lines.append(f"  {ctype:<20} {cstatus:<6} {reason:<24} {message}"[:160])
    lines.append("")
    lines.append(f"  {'POD':<58} {'POOL/CELL':<18} {'READY':<6} {'ROLE':<8} {'SYNC':<5} {'DRAIN':<19} RESTARTS")
    for p in report.pods:
        sync = "?" if p.in_sync_set is None else ("yes" if p.in_sync_set else "no")
        drain = p.drain or ("decommission" if p.name in report.decommission else "fenced" if p.fenced else "-")
        lines.append(f"  {p.name:<58} {p.pool + '/' + p.cell:<18} {'yes' if p.ready else 'no':<6} "
                     f"{p.role or '-':<8} {sync:<5} {drain:<19} {p.restarts}")
    lines.append("")
    if report.primary:
        lines.append(f"  primary (confirmed by consensus): {report.primary}")
        lines.append(f"  synchronous standbys: {', '.join(report.synchronous_standby_names) or '(none)'}")
        if report.cohort:
            lines.append(f"  cohort: {', '.join(report.cohort)}  durability: {_durability(report.durability)}")
    for label in ("running", "last"):
        run = report.backup.get(label) or {}
        if run:
            lines.append(f"  backup {label}: {_backup_run(run)}")
    if report.backups:
        lines.append("  last backups: " + "; ".join(
            f"{bid} {btype} {'complete' if done else 'INCOMPLETE'}" for bid, btype, done in report.backups))
    blocked = report.blocked
    lines.append("")
    lines.append("  blocked: " + ("nothing" if not blocked else ""))
    lines += [f"    - {b}" for b in blocked]
    return "\n".join(lines) + "\n"


def _backup_run(run: dict[str, Any]) -> str:
    """One line of a status.backup run (model.BackupRun)."""
    where = run.get("pod", "?") + (" (primary, forced)" if run.get("forcePrimary") else "")
    line = f"{run.get('type', '?')} by {run.get('trigger', '?')} on {where}, started {run.get('startedAt', '?')}"
    if run.get("finishedAt"):
        line += f", finished {run['finishedAt']}"
    if run.get("backupId"):
        line += f": {run['backupId']}"
    if run.get("sizeBytes") is not None:
        line += f" ({int(run['sizeBytes']) / 2**20:.1f} MiB)"
    if run.get("error"):
        line += f": FAILED: {run['error']}"
    return line


def _durability(policy: Durability | None) -> str:
    if policy is None:
        return "-"
    return f"at least {policy.required} {'cells' if policy.multi_cell else 'poolers'}"


def as_json(report: Report) -> str:
    body = asdict(report)
    body["blocked"] = report.blocked
    return json.dumps(body, indent=2, sort_keys=True) + "\n"


EXAMPLES = cli_help.examples(
    "multigres-pools status orders -n db                       inside or outside the cluster network",
    "multigres-pools status play -n play --dial-pod-ips         only pod IPs, never cluster DNS names",
    "multigres-pools status orders -n db -o json | jq .blocked")


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser("multigres-pools status", __doc__.split("\n\n")[0], EXAMPLES)
    p.add_argument("shard", help="the MultigresShard's name")
    p.add_argument("-n", "--namespace", default="default", help="its namespace (default %(default)s)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="format (default %(default)s)")
    p.add_argument("--dial-pod-ips", action="store_true",
                   help="dial poolers at their pod IPs, never their registered hostnames (by default a "
                        "hostname that does not resolve here is dialled at its pod's IP)")
    p.add_argument("--rpc-timeout", type=float, default=5.0, help="seconds per data-plane call (default %(default)s)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        kube = connect(args.kubeconfig)
    except Exception as exc:  # a missing or broken kubeconfig: say which, do not trace back
        print(f"multigres-pools status: cannot load the kubeconfig: {exc}", file=sys.stderr)
        return 2
    try:
        address = pod_address if args.dial_pod_ips else pod_address_unless_resolvable

        def dial(host: str) -> str:
            return address(kube, host)

        report = gather(kube, args.namespace, args.shard, dial_host=dial, rpc_timeout=args.rpc_timeout)
    except LookupError as exc:
        print(f"multigres-pools status: {exc}", file=sys.stderr)
        return 1
    except KubeError as exc:
        print(f"multigres-pools status: the API server refused: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # refused, unknown host, TLS, timeout: the usual state of an old KUBECONFIG
        print(f"multigres-pools status: cannot reach the API server {kube.creds.server}: {exc} "
              "(is the cluster up, and is this the kubeconfig and context you meant?)", file=sys.stderr)
        return 1
    finally:
        kube.close()
    sys.stdout.write(as_json(report) if args.output == "json" else text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
