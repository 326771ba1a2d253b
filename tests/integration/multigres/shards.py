"""Helpers for a stack that serves more than one MultigresShard (a source and its clone): everything
here is scoped by clusterName (`app.kubernetes.io/instance`), never by namespace alone."""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

from .safety import note


def clone_spec(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """`doc` (a MultigresShard named for its clusterName) as a clone of `source`: its own clusterName and
    topology root, no multigateway, no postgresPasswordSecretRef (the engine copies the source's
    password into the clone's own Secret)."""
    name = doc["metadata"]["name"]
    doc["spec"]["clusterName"] = name
    doc["spec"]["globalTopoServer"]["rootPath"] = f"/multigres/{name}"
    doc["spec"]["multigateway"] = {"enabled": False}
    doc["spec"]["backup"]["cloneFrom"] = {"shard": source}
    return doc


def cluster_pods(stack: MultigresStack, cluster: str,
                 component: str | None = keys.COMPONENT_POOL) -> list[dict[str, Any]]:
    """The pods of one clusterName (every component with `component` None), by name."""
    selector = f"{keys.LABEL_APP_INSTANCE}={cluster}"
    if component is not None:
        selector = f"{keys.LABEL_APP_COMPONENT}={component},{selector}"
    kube = stack.kube()
    try:
        return sorted(kube.list("v1", "Pod", stack.namespace, selector), key=facts.name)
    finally:
        kube.close()


def cluster_claims(stack: MultigresStack, cluster: str) -> list[str]:
    """The PVCs of one clusterName: its pods' data claims and its backup claim (core/naming.py)."""
    kube = stack.kube()
    try:
        names = [facts.name(c) for c in kube.list("v1", "PersistentVolumeClaim", stack.namespace)]
    finally:
        kube.close()
    return sorted(n for n in names if n.startswith((f"data-{cluster}-", f"backup-data-{cluster}-")))


def alive(pod: dict[str, Any]) -> bool:
    return not facts.meta(pod).get("deletionTimestamp")


def writable_pods(stack: MultigresStack, cluster: str, password: str) -> list[tuple[str, str]]:
    """(pod, IP) of every pod of `cluster` whose PostgreSQL answers that it is out of recovery."""
    out = []
    for pod in cluster_pods(stack, cluster):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or not alive(pod):
            continue
        with contextlib.suppress(psycopg.Error), psycopg.connect(
                stack.dsn(ip, password=password), connect_timeout=2, autocommit=True) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and not row[0]:
                out.append((facts.name(pod), str(ip)))
    return out


def delete_shard(stack: MultigresStack, name: str, cluster: str) -> None:
    """The MultigresShard gone, every pod of its clusterName gone, and its PVCs deleted (a PVC may
    outlive its shard on purpose: a backup repository is kept)."""
    kube = stack.kube()
    try:
        kube.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, name)
        wait_for(lambda: kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, name) is None, 300,
                 f"MultigresShard {name} to go", interval=1)
        wait_for(lambda: not cluster_pods(stack, cluster, None), 300, f"every pod of {cluster} to go", interval=1)
        for claim in cluster_claims(stack, cluster):
            kube.delete("v1", "PersistentVolumeClaim", stack.namespace, claim)
        wait_for(lambda: not cluster_claims(stack, cluster), 120, f"the PVCs of {cluster} to go", interval=1)
    finally:
        kube.close()


def delete_quietly(stack: MultigresStack, name: str, cluster: str) -> None:
    """delete_shard after a failure: best effort (stack.stop() takes the rest), never masking it."""
    try:
        delete_shard(stack, name, cluster)
    except Exception as exc:  # the test's own failure is the one to report
        note(f"cleanup of {name} failed", repr(exc))
