"""The operator's allow-lists for images, ServiceAccounts and Secrets (spec/policy.py)."""

from __future__ import annotations

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy, parse_list

from multigres_pools.install import bundle

BASE = {"clusterName": "demo", "globalTopoServer": {"address": "topo:2379"},
        "pools": {"main": {"cells": ["z1"], "replicasPerCell": 2}}}


def _spec(**extra: object) -> model.MultigresShardSpec:
    return model.load_spec({**BASE, **extra})


ESCALATING = _spec(
    images={"postgres": "evil.example/pg:1", "multipooler": "ghcr.io/multigres/multigres:v0.1.0",
            "imagePullSecrets": [{"name": "pull"}]},
    backup={"type": "s3", "s3": {"bucket": "bkt", "region": "eu", "serviceAccountName": "admin"}},
    postgresPasswordSecretRef={"name": "someone-elses"},
)


def test_an_empty_policy_allows_everything() -> None:
    assert SpecPolicy().problems(ESCALATING) == []


def test_each_disallowed_value_is_refused_with_its_field() -> None:
    policy = SpecPolicy.of(images=["ghcr.io/multigres/*"], service_accounts=["backup"], secrets=["pull"])
    problems = policy.problems(ESCALATING)
    assert [p.split(":")[0] for p in problems] == [
        "spec.images.postgres", "spec.backup.s3.serviceAccountName", "spec.postgresPasswordSecretRef.name"]
    assert "image 'evil.example/pg:1' is not allowed" in problems[0] and "ghcr.io/multigres/*" in problems[0]


def test_unset_images_and_the_default_exporter_are_never_checked() -> None:
    assert SpecPolicy.of(images=["nothing-matches"]).problems(_spec()) == []


def test_lists_parse_from_comma_separated_text_and_reach_the_bundle() -> None:
    assert parse_list(" a, b,,c ") == ("a", "b", "c")
    policy = SpecPolicy.from_env({"MULTIGRES_POOLS_ALLOWED_IMAGES": "ghcr.io/multigres/*,postgres:17"})
    assert policy.images == ("ghcr.io/multigres/*", "postgres:17") and not policy.secrets
    assert SpecPolicy.from_env(policy.environment()) == policy
    deployment = yaml.safe_load(bundle.files(policy=policy)["operator-deployment.yaml"])
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--allowed-images=ghcr.io/multigres/*,postgres:17" in args
    assert not any(a.startswith("--allowed-secrets") for a in args)


def test_the_grpc_tls_secret_is_a_secret_the_allow_list_must_admit() -> None:
    spec = _spec(security={"grpcTLS": {"secretName": "someone-elses-tls"}})
    assert SpecPolicy.of(secrets=["grpc-*"]).problems(spec) == [
        "spec.security.grpcTLS.secretName: Secret 'someone-elses-tls' is not allowed by the operator's "
        "configuration (allowed: grpc-*)"]
    assert SpecPolicy.of(secrets=["someone-elses-tls"]).problems(spec) == []
