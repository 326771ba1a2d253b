"""Golden names, computed by hand from the documented algorithm (contract §3.5), never by core/naming.py.

Each hash below was computed outside this repository with a separate FNV-1a-32 (offset 0x811c9dc5,
prime 0x01000193, every part followed by one NUL byte) and the truncation rule applied by hand:
keep `max - 8 - 3` characters of the joined name, then `---` and the hash.
"""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import naming

EXAMPLE = naming.ShardId("mycluster", "postgres", "default", "0-inf")
LONG = naming.ShardId("production-analytics-cluster", "postgres", "default", "0-inf")


def test_hash_test_vector_from_the_go_repository():
    assert naming.join(naming.DEFAULT, "hello", "world") == "hello-world-344ce285"


def test_worked_example_from_the_contract():
    pod = naming.pod_name(EXAMPLE, "default", "zone1", 0)
    assert pod == "mycluster-postgres-default-0-inf-pool-default-zone1-f1461d13-0"
    assert naming.data_pvc_name(EXAMPLE, "default", "zone1", 0) == (
        "data-mycluster-postgres-default-0-inf-pool-default-zone1-f1461d13-0"
    )
    assert naming.service_id(naming.pod_name(EXAMPLE, "default", "zone1", 0)) == "p-c250f84b"
    assert naming.headless_service_name(EXAMPLE, "default", "zone1") == (
        "mycluster-postgres-default-0-inf-pool-default-zone1----92e947f4"
    )
    pdb = naming.pdb_name(EXAMPLE, "default", "zone1")
    assert pdb == "mycluster-postgres-default-0-inf-pool-default-zone1----5794a6ed"
    orch = naming.multiorch_deployment_name(EXAMPLE, "zone1")
    assert orch == "mycluster-postgres-default-0-inf-multiorch-zone1-6d181531"
    assert naming.backup_pvc_name(EXAMPLE, "zone1") == "backup-data-mycluster-postgres-default-0-inf-zone1-ca9b1d9d"


def test_v0_1_names():
    # Hashes computed outside core/naming.py, like the ones above.
    assert naming.shard_backup_pvc_name(EXAMPLE) == "backup-data-mycluster-postgres-default-0-inf-65b089fa"
    gateway = "mycluster-postgres-default-0-inf-multigateway-zone1-a68b5d79"
    assert naming.multigateway_deployment_name(EXAMPLE, "zone1") == gateway
    assert naming.multigateway_service_name(EXAMPLE, "zone1") == gateway  # 60 characters: fits a Service
    assert naming.shard_backup_pvc_name(LONG) == "backup-data-production-analytics-cluster-postgres-de---da9e9593"
    assert naming.pooler_fqdn("pod-0", "svc", "ns", "cluster.local") == "pod-0.svc.ns.svc.cluster.local"


def test_shard_level_names_hang_off_the_shard_resource_name():
    base = "mycluster-postgres-default-0-inf-dc54e8a3"
    assert naming.shard_resource_name(EXAMPLE) == base
    assert naming.pg_hba_configmap_name(EXAMPLE) == f"{base}-pg-hba"
    assert naming.password_secret_name(EXAMPLE) == f"{base}-postgres-password"
    assert naming.pgbackrest_ca_secret_name(EXAMPLE) == f"{base}-pgbackrest-ca"
    assert naming.pgbackrest_tls_secret_name(EXAMPLE) == f"{base}-pgbackrest-tls"


@pytest.mark.parametrize(("name", "expected", "limit"), [
    # joined name is 77 characters: 49 kept + '---' + hash = 60 (the pod constraint)
    (naming.pool_base(LONG, "reporting", "us-east-1a"),
     "production-analytics-cluster-postgres-default-0-i---c589b8c9", 60),
    (naming.headless_service_name(LONG, "reporting", "us-east-1a"),
     "production-analytics-cluster-postgres-default-0-inf----79d00dfe", 63),
    (naming.pdb_name(LONG, "reporting", "us-east-1a"),
     "production-analytics-cluster-postgres-default-0-inf----f7cade07", 63),
    (naming.backup_pvc_name(LONG, "us-east-1a"),
     "backup-data-production-analytics-cluster-postgres-de---826b06f0", 63),
    (naming.multiorch_service_name(LONG, "us-east-1a"),
     "production-analytics-cluster-postgres-default-0-inf----13404dae", 63),
])
def test_truncated_long_names(name, expected, limit):
    assert name == expected
    assert len(name) == limit


def test_long_names_under_the_default_limit_are_not_truncated():
    assert naming.multiorch_deployment_name(LONG, "us-east-1a") == (
        "production-analytics-cluster-postgres-default-0-inf-multiorch-us-east-1a-13404dae"
    )


def test_truncated_pod_keeps_its_index_and_a_distinct_service_id():
    pod = naming.pod_name(LONG, "reporting", "us-east-1a", 2)
    assert pod == "production-analytics-cluster-postgres-default-0-i---c589b8c9-2"
    assert naming.data_pvc_name(LONG, "reporting", "us-east-1a", 2) == f"data-{pod}"
    assert naming.service_id(pod) == "p-49b5598e"


def test_first_character_and_sanitising_rules():
    # Service/pod constraints need a leading letter: 'x' is prefixed; the hash uses the raw parts.
    digit = naming.ShardId("9lives", "postgres", "default", "0-inf")
    assert naming.headless_service_name(digit, "p", "z") != naming.headless_service_name(EXAMPLE, "p", "z")
    joined = naming.join(naming.SERVICE, *digit.parts, "pool", "p", "z")
    assert joined == "x9lives-postgres-default-0-inf-pool-p-z-0a18c25d"
    # The default constraint accepts a leading digit.
    assert naming.shard_resource_name(digit) == "9lives-postgres-default-0-inf-67afbb37"
    # Upper case is lowered, anything outside [a-z0-9-] becomes '-'; the hash still sees 'My_Cluster'.
    upper = naming.ShardId("My_Cluster", "postgres", "default", "0-inf")
    assert naming.pool_base(upper, "Main", "z1") == "my-cluster-postgres-default-0-inf-pool-main-z1-2c4028a6"


def test_a_constraint_below_twelve_characters_is_refused():
    with pytest.raises(ValueError, match="minimum of 12"):
        naming.join(naming.Constraint(11, first_char_letter_only=False), "a")
