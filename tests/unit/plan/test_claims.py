"""state/claims.py: which MultigresShards name the same topology root or S3 repository, and who holds it."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import claims


def _shard(name: str, namespace: str = "db", created: str = "2026-11-29T04:00:00Z", uid: str | None = None,
           **spec: Any) -> dict[str, Any]:
    body = {"clusterName": name, "globalTopoServer": {"address": "etcd:2379"}, **spec}
    return {"metadata": {"name": name, "namespace": namespace, "creationTimestamp": created, "uid": uid or name},
            "spec": body}


def test_the_defaults_a_claim_reads_are_the_models() -> None:
    spec = model.load_spec({"clusterName": "a", "globalTopoServer": {"address": "etcd:2379"},
                            "pools": {"main": {"cells": ["z1"]}}})
    assert spec.global_topo_server.root_path == claims.DEFAULT_ROOT_PATH
    assert (spec.database_name, spec.table_group_name, spec.shard_name) == claims.DEFAULT_SHARD_KEY


@pytest.mark.parametrize(("mine", "theirs", "namespace", "same"), [
    ("etcd:2379", "etcd.db:2379", "db", True),                      # a Service of the shard's namespace
    ("etcd.db.svc.cluster.local:2379", "http://etcd.db.svc:2379", "db", True),
    ("https://ETCD:2379", "etcd:2379", "db", True),                  # the scheme does not matter
    ("etcd:2379", "etcd:2379", "staging", False),                   # another namespace's Service
    ("a:2379,b:2379", "b:2379,c:2379", "db", True),                 # one endpoint in common is one cluster
    ("etcd:2379", "etcd:2380", "db", False),
    ("10.0.0.7:2379", "10.0.0.7:2379", "staging", True),
])
def test_topologies_are_the_same_servers_under_any_spelling(mine: str, theirs: str, namespace: str,
                                                             same: bool) -> None:
    older = _shard("a", created="2026-11-29T03:00:00Z", globalTopoServer={"address": theirs})
    younger = _shard("b", namespace=namespace, globalTopoServer={"address": mine})
    assert bool(claims.conflicts(younger, [older, younger])) is same


def test_another_root_or_another_shard_key_is_another_shard() -> None:
    older = _shard("a", created="2026-11-29T03:00:00Z")
    assert claims.conflicts(_shard("b", globalTopoServer={"address": "etcd:2379", "rootPath": "/other"}), [older]) == []
    assert claims.conflicts(_shard("b", tableGroupName="other"), [older]) == []
    assert claims.conflicts(_shard("b", globalTopoServer={"address": "etcd:2379",
                                                          "rootPath": "/multigres/global"}), [older])


def test_the_older_shard_holds_the_claim_and_a_tie_goes_to_the_name() -> None:
    a, b = _shard("a", created="2026-11-29T05:00:00Z"), _shard("b", created="2026-11-29T04:00:00Z")
    assert claims.conflicts(b, [a, b]) == []
    assert claims.conflicts(a, [a, b])[0].startswith("spec.globalTopoServer: the topology etcd.db:2379 root "
                                                     "/multigres/global (shard postgres/default/0-inf) is already "
                                                     "MultigresShard db/b's (created earlier)")
    tie_a, tie_b = _shard("a"), _shard("b")
    assert claims.conflicts(tie_a, [tie_b]) == [] and claims.conflicts(tie_b, [tie_a])


def test_s3_repositories_compare_endpoint_bucket_and_path() -> None:
    s3 = {"type": "s3", "s3": {"bucket": "backups", "region": "eu-west-1", "keyPrefix": "orders"}}
    older = _shard("a", created="2026-11-29T03:00:00Z", backup=s3)

    def younger(**changes: Any) -> list[str]:
        # Its own topology root, so only the repository can be the same.
        return claims.conflicts(_shard("b", namespace="staging", backup={**s3, "s3": {**s3["s3"], **changes}},
                                       globalTopoServer={"address": "etcd:2379", "rootPath": "/staging"}), [older])

    (error,) = younger(keyPrefix="//orders/")
    assert error.startswith("spec.backup.s3: the S3 repository s3://backups/orders/multigres at "
                            "s3.eu-west-1.amazonaws.com is already MultigresShard db/a's"), error
    assert younger(endpoint="https://S3.eu-west-1.amazonaws.com")  # AWS's endpoint, named
    assert younger(keyPrefix="orders-staging") == []
    assert younger(bucket="backups-staging") == []
    assert younger(endpoint="minio:9000") == []
    assert younger(region="us-east-1") == []  # another region's endpoint
    # A filesystem repository is a PVC of the shard's own: no claim.
    assert claims.conflicts(_shard("b", namespace="staging", globalTopoServer={"address": "etcd:2379",
                                                                             "rootPath": "/staging"}), [older]) == []


def test_a_claimant_whose_address_cannot_be_read_holds_nothing() -> None:
    broken = _shard("a", created="2026-11-29T03:00:00Z", globalTopoServer={"address": "etcd"})
    assert claims.conflicts(_shard("b"), [broken]) == []


def test_the_scope_reads_namespaces_or_every_one() -> None:
    assert claims.scope(" db, analytics,,db") == ("db", "analytics")
    assert claims.scope("db,*") == (claims.ALL_NAMESPACES,)
    assert claims.scope(None) == ()
