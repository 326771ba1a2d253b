"""pgbackrestTLS.mode auto: the renderer declares the material, the planner asks for it only when it is
missing or its names changed, and the certificate really chains to the CA it ships with."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import replace

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import tls
from ansible_collections.multigres.pools.plugins.module_utils.plan import tls_policy
from ansible_collections.multigres.pools.plugins.module_utils.plan.actions import Verb
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from .plan_factories import NOW, desired, healthy, observed, plan

SPEC = {"clusterName": "demo", "globalTopoServer": {"address": "topo:2379", "rootPath": "/multigres/global"},
        "pools": {"main": {"cells": ["z1"], "replicasPerCell": 3}}}


def _render(spec: dict) -> render.Desired:
    return render.desired_state(model.load_spec(spec, root='spec'), "db")


def _secret(name: str, annotations: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "annotations": annotations or {}}}


def test_auto_mode_declares_material_and_other_modes_do_not():
    gen = _render(SPEC).generated_tls
    assert gen is not None and gen.ca_secret.endswith("-pgbackrest-ca") and gen.tls_secret.endswith("-pgbackrest-tls")
    assert all(name.startswith("*.") for name in gen.dns_names)
    with_secret = {**SPEC, "backup": {"pgbackrestTLS": {"mode": "secret", "secretName": "mine"}}}
    assert _render(with_secret).generated_tls is None


def test_fingerprint_follows_the_names():
    one = _render(SPEC).generated_tls
    two_cells = {**SPEC, "pools": {"main": {"cells": ["z1", "z2"], "replicasPerCell": 3}}}
    two = _render(two_cells).generated_tls
    assert one and two and one.fingerprint != two.fingerprint
    assert set(one.dns_names) < set(two.dns_names)
    assert _render(SPEC).generated_tls == one


def _plan_with(secrets: list[dict]):  # type: ignore[no-untyped-def]
    gen = _render(SPEC).generated_tls
    assert gen is not None
    want = replace(desired(), generated_tls=gen)
    pods, pvcs = healthy(want.pools[0])
    obs = observed(pods, pvcs, others={"Secret": tuple(secrets)})
    return gen, [a for a in plan(want, obs, NOW).actions if a.verb is Verb.GENERATE_TLS]


def _dated(issued: dt.datetime, valid: dt.timedelta, **extra: str) -> dict[str, str]:
    return {keys.ANN_TLS_ISSUED_AT: facts.format_time(issued),
            keys.ANN_TLS_NOT_AFTER: facts.format_time(issued + valid), **extra}


def _current(gen, *, ca_issued=NOW, leaf_issued=NOW, **ca_extra):  # type: ignore[no-untyped-def]
    """A CA and a certificate Secret as the apply step annotates them."""
    ca = _secret(gen.ca_secret, _dated(ca_issued, tls_policy.CA_VALIDITY, **{keys.ANN_TLS_CA_ID: "ca1"}, **ca_extra))
    leaf = _secret(gen.tls_secret, _dated(leaf_issued, tls_policy.LEAF_VALIDITY, **{
        keys.ANN_TLS_FINGERPRINT: gen.fingerprint, keys.ANN_TLS_ISSUER: "ca1"}))
    return [ca, leaf]


def test_planner_generates_only_what_is_missing_or_stale():
    gen, missing = _plan_with([])
    assert len(missing) == 1 and missing[0].reason.startswith("create pgBackRest CA Secret")
    _, leaf_missing = _plan_with([_secret(gen.ca_secret)])
    assert len(leaf_missing) == 1 and leaf_missing[0].reason.startswith("issue pgBackRest certificate")
    _, nothing = _plan_with(_current(gen))
    assert nothing == []
    ca, leaf = _current(gen)
    leaf["metadata"]["annotations"][keys.ANN_TLS_FINGERPRINT] = "old"
    _, stale = _plan_with([ca, leaf])
    assert len(stale) == 1 and "re-issue" in stale[0].reason and stale[0].body["step"] == tls_policy.Step.ISSUE
    assert "key" not in stale[0].as_dict()
    _, legacy = _plan_with([_secret(gen.ca_secret), _current(gen)[1]])
    assert [a.body["step"] for a in legacy] == ["issue"] and "not recorded yet" in legacy[0].reason


def test_certificate_is_renewed_once_less_than_a_third_of_its_validity_remains():
    gen = _render(SPEC).generated_tls
    assert gen is not None
    two_thirds = tls_policy.LEAF_VALIDITY * 2 / 3
    fresh = _current(gen, leaf_issued=NOW - two_thirds + dt.timedelta(hours=1))
    assert tls_policy.decide(gen, *fresh, NOW) is None
    due = _current(gen, leaf_issued=NOW - two_thirds)
    decision = tls_policy.decide(gen, *due, NOW)
    assert decision is not None and decision.step is tls_policy.Step.ISSUE and decision.renewal
    assert decision.reason.startswith("renew pgBackRest certificate Secret") and "expires at" in decision.reason
    ca, leaf = _current(gen)
    leaf["metadata"]["annotations"][keys.ANN_TLS_ISSUER] = "retired"
    signer_changed = tls_policy.decide(gen, ca, leaf, NOW)
    assert signer_changed is not None and "its issuer is not the signing CA" in signer_changed.reason


def test_ca_rotation_stages_a_successor_then_promotes_it_after_the_overlap():
    gen = _render(SPEC).generated_tls
    assert gen is not None
    old_ca = NOW - tls_policy.CA_VALIDITY * 2 / 3
    stage = tls_policy.decide(gen, *_current(gen, ca_issued=old_ca), NOW)
    assert stage is not None and stage.step is tls_policy.Step.STAGE_CA and "publish a successor CA" in stage.reason
    staged = _current(gen, ca_issued=old_ca, **{keys.ANN_TLS_CA_STAGED_AT: facts.format_time(NOW)})
    during = NOW + tls_policy.CA_OVERLAP - dt.timedelta(seconds=1)
    assert tls_policy.decide(gen, *staged, during) is None  # the old CA keeps signing: nothing to do
    promote = tls_policy.decide(gen, *staged, NOW + tls_policy.CA_OVERLAP)
    assert promote is not None and promote.step is tls_policy.Step.PROMOTE_CA

    def pod(name: str, created: dt.datetime) -> dict:
        return {"metadata": {"name": name, "creationTimestamp": facts.format_time(created)}}

    before, after = pod("p-0", NOW - dt.timedelta(days=1)), pod("p-1", NOW + dt.timedelta(hours=1))
    later = NOW + tls_policy.CA_OVERLAP
    assert tls_policy.decide(gen, *staged, later, [before, after]) is None  # p-0's server predates the successor
    assert tls_policy.decide(gen, *staged, later, [after]) == promote
    forced = tls_policy.forced_at(staged[0])
    assert forced is not None and tls_policy.decide(gen, *staged, forced, [before, after]) == promote
    waiting = tls_policy.status(gen, *staged, [before, after])
    assert waiting is not None and waiting["caPromotionWaitsFor"] == ["p-0"]
    report = tls_policy.status(gen, *staged)
    assert report is not None and report["nextRenewal"] == report["caPromotesAt"] == facts.format_time(
        NOW + tls_policy.CA_OVERLAP)


def test_renewals_are_reported_as_events_on_the_shard_and_the_first_issue_is_not():
    gen = _render(SPEC).generated_tls
    assert gen is not None
    want = replace(desired(), generated_tls=gen)
    pods, pvcs = healthy(want.pools[0])
    cr = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
          "metadata": {"name": "demo", "namespace": "db", "uid": "u1"}}

    def events(secrets: list[dict]) -> list[str]:
        obs = replace(observed(pods, pvcs, others={"Secret": tuple(secrets)}), cr=cr)
        return [a.event_reason or "" for a in plan(want, obs, NOW).actions if a.verb is Verb.EVENT]

    assert "CertificateRenewed" not in events([])
    assert "CertificateRenewed" in events(_current(gen, leaf_issued=NOW - tls_policy.LEAF_VALIDITY))
    assert "CARotation" in events(_current(gen, ca_issued=NOW - tls_policy.CA_VALIDITY))


def test_issued_certificate_chains_to_its_ca_with_the_requested_names():
    now = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
    ca_data = tls.new_ca("pgbackrest", now)
    leaf_data = tls.issue(ca_data, "pgbackrest", ["*.svc-a.db.svc", "*.svc-b.db.svc"], now)
    ca = x509.load_pem_x509_certificate(base64.b64decode(ca_data[tls.CA_CERT_KEY]))
    leaf = x509.load_pem_x509_certificate(base64.b64decode(leaf_data[tls.TLS_CERT_KEY]))
    leaf.verify_directly_issued_by(ca)
    assert leaf_data[tls.CA_CERT_KEY] == ca_data[tls.CA_CERT_KEY]
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["*.svc-a.db.svc", "*.svc-b.db.svc"]
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
