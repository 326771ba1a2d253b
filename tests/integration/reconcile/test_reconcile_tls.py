"""pgbackrestTLS.mode auto on the real apiserver: the engine creates the CA and certificate Secrets the
pods mount, never reports key material, re-issues from the same CA when a cell is added, renews the
certificate and rotates the CA before they expire, and otherwise leaves them alone."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube import tls
from ansible_collections.multigres.pools.plugins.module_utils.plan import tls_policy
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from cryptography import x509

from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")
CA = naming.pgbackrest_ca_secret_name(SID)
LEAF = naming.pgbackrest_tls_secret_name(SID)


def _cert(secret: dict, key: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def _dns_names(secret: dict) -> set[str]:
    ext = _cert(secret, tls.TLS_CERT_KEY).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return set(ext.value.get_values_for_type(x509.DNSName))


def test_auto_tls_secrets_are_created_once_and_reissued_from_the_same_ca(rig):  # type: ignore[no-untyped-def]
    first = rig.run(spec(2), diff=True)
    generated = [a for a in first.actions if a["verb"] == "generate-tls"]
    assert [a["name"] for a in generated] == [LEAF]

    ca = rig.client.get("v1", "Secret", rig.namespace, CA)
    leaf = rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert ca is not None and leaf is not None
    _cert(leaf, tls.TLS_CERT_KEY).verify_directly_issued_by(_cert(ca, tls.CA_CERT_KEY))
    headless = naming.headless_service_name(SID, POOL, CELL)
    assert f"*.{headless}.{rig.namespace}.svc" in _dns_names(leaf)
    reported = json.dumps([first.actions, first.plan, first.diff], default=str)
    for value in (*ca["data"].values(), *leaf["data"].values()):
        assert value not in reported  # no key or certificate ever leaves the cluster through results

    pod = rig.client.get("v1", "Pod", rig.namespace, naming.pod_name(SID, POOL, CELL, 0))
    projected = [s for v in pod["spec"]["volumes"] for s in (v.get("projected") or {}).get("sources", [])]
    assert {CA, LEAF} <= {(s.get("secret") or {}).get("name") for s in projected}  # what the pods mount

    rig.settle(spec(2))
    assert not [a for a in rig.run(spec(2)).actions if a["verb"] == "generate-tls"]
    assert rig.client.get("v1", "Secret", rig.namespace, LEAF)["data"] == leaf["data"]

    two_cells = spec(2, cells=[CELL, "z2"])
    again = rig.run(two_cells)
    assert [a["reason"] for a in again.actions if a["verb"] == "generate-tls"] == [
        f"re-issue pgBackRest certificate Secret {LEAF}: the pool pods' names changed"]
    reissued = rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert reissued["data"][tls.TLS_KEY_KEY] != leaf["data"][tls.TLS_KEY_KEY]
    assert rig.client.get("v1", "Secret", rig.namespace, CA)["data"] == ca["data"]
    _cert(reissued, tls.TLS_CERT_KEY).verify_directly_issued_by(_cert(ca, tls.CA_CERT_KEY))
    z2 = naming.headless_service_name(SID, POOL, "z2")
    assert f"*.{z2}.{rig.namespace}.svc" in _dns_names(reissued)
    assert facts.annotations(reissued)[keys.ANN_TLS_FINGERPRINT] != facts.annotations(leaf)[keys.ANN_TLS_FINGERPRINT]


def test_generated_password_secret_is_created_once_and_never_reported(rig):  # type: ignore[no-untyped-def]
    name = naming.password_secret_name(SID)
    first = rig.run(spec(2), diff=True)
    assert [a["name"] for a in first.actions if a["verb"] == "generate-password"] == [name]
    secret = rig.client.get("v1", "Secret", rig.namespace, name)
    value = secret["data"]["password"]
    assert len(base64.b64decode(value)) >= 32
    assert value not in json.dumps([first.actions, first.plan, first.diff], default=str)

    rig.settle(spec(2))
    assert not [a for a in rig.run(spec(2)).actions if a["verb"] == "generate-password"]
    assert rig.client.get("v1", "Secret", rig.namespace, name)["data"] == {"password": value}


def _pem_count(secret: dict) -> int:
    return len(x509.load_pem_x509_certificates(base64.b64decode(secret["data"][tls.CA_CERT_KEY])))


def _renewal_events(rig) -> list[str]:  # type: ignore[no-untyped-def]
    found = rig.client.list("v1", "Event", rig.namespace)
    return [e["reason"] for e in found if e["reason"] in ("CertificateRenewed", "CARotation")]


def test_material_issued_long_ago_is_renewed_and_the_ca_rotated_with_an_overlap(rig, shard_crd):  # type: ignore[no-untyped-def]
    """Certificates made by a pass whose clock was 2900 days ago (the CA then has 750 of its 3650 days
    left, the certificate expired long ago): later passes renew the certificate with the old CA while
    a successor CA joins the bundle; the successor is promoted after the overlap once no pod predates
    it, or when the old CA gets close to expiry; each step is reported in status and as an Event."""
    rig.clock = dt.datetime.now(dt.UTC) - dt.timedelta(days=2900)
    rig.create_cr(spec(2))
    rig.run(name="demo")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=1)  # after the pod was created
    old_ca = rig.client.get("v1", "Secret", rig.namespace, CA)
    old_leaf = rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert _cert(old_leaf, tls.TLS_CERT_KEY).not_valid_after_utc < now  # already expired

    rig.clock = now
    staged = rig.run(name="demo")
    assert next(a["reason"] for a in staged.actions if a["verb"] == "generate-tls").startswith(
        f"CA Secret {CA} expires")
    ca, leaf = rig.client.get("v1", "Secret", rig.namespace, CA), rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert _pem_count(ca) == 2 and ca["data"][tls.CA_KEY_KEY] == old_ca["data"][tls.CA_KEY_KEY]
    _cert(leaf, tls.TLS_CERT_KEY).verify_directly_issued_by(_cert(old_ca, tls.CA_CERT_KEY))  # old CA still signs
    assert _cert(leaf, tls.TLS_CERT_KEY).not_valid_after_utc > now + dt.timedelta(days=600)
    assert facts.annotations(ca)[keys.ANN_TLS_CA_STAGED_AT] == facts.format_time(now)
    assert not [a for a in rig.run(name="demo").actions if a["verb"] == "generate-tls"]  # the overlap: nothing to do
    report = rig.cr()["status"]["pgbackrestTLS"]
    assert report["caPromotesAt"] == report["nextRenewal"] == facts.format_time(now + tls_policy.CA_OVERLAP)
    assert report["certificateNotAfter"] == facts.format_time(_cert(leaf, tls.TLS_CERT_KEY).not_valid_after_utc)

    rig.clock = now + tls_policy.CA_OVERLAP  # the pod predates the successor CA: its pgBackRest server
    assert not [a for a in rig.run(name="demo").actions if a["verb"] == "generate-tls"]  # does not trust it
    report = rig.cr()["status"]["pgbackrestTLS"]
    assert report["caPromotionWaitsFor"] == list(rig.pods())
    forced = facts.parse_time(report["caPromotionForcedAt"])
    assert forced is not None and forced < _cert(old_leaf, tls.CA_CERT_KEY).not_valid_after_utc

    rig.clock = forced
    promoted = rig.run(name="demo")
    assert [a["verb"] for a in promoted.actions].count("generate-tls") == 1
    ca, leaf = rig.client.get("v1", "Secret", rig.namespace, CA), rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert set(ca["data"]) == {tls.CA_CERT_KEY, tls.CA_KEY_KEY} and _pem_count(ca) == 2
    _cert(leaf, tls.TLS_CERT_KEY).verify_directly_issued_by(_cert(ca, tls.CA_CERT_KEY))  # the successor signs
    assert keys.ANN_TLS_CA_STAGED_AT not in facts.annotations(ca)
    assert _renewal_events(rig) == ["CARotation", "CARotation"]
    report = rig.cr()["status"]["pgbackrestTLS"]
    assert "caPromotesAt" not in report and report["caNotAfter"] == facts.format_time(
        _cert(ca, tls.CA_CERT_KEY).not_valid_after_utc)
    assert not [a for a in rig.run(name="demo").actions if a["verb"] == "generate-tls"]


def test_a_certificate_near_expiry_is_renewed_from_the_same_ca(rig, shard_crd):  # type: ignore[no-untyped-def]
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    rig.clock = now - dt.timedelta(days=600)  # 225 of 825 days left: due; the CA is not
    rig.create_cr(spec(2))
    rig.run(name="demo")
    ca, leaf = rig.client.get("v1", "Secret", rig.namespace, CA), rig.client.get("v1", "Secret", rig.namespace, LEAF)
    rig.clock = now
    renewed = rig.run(name="demo")
    assert next(a["reason"] for a in renewed.actions if a["verb"] == "generate-tls").startswith(
        f"renew pgBackRest certificate Secret {LEAF}: it expires at")
    after = rig.client.get("v1", "Secret", rig.namespace, LEAF)
    assert rig.client.get("v1", "Secret", rig.namespace, CA)["data"] == ca["data"]
    assert after["data"][tls.TLS_KEY_KEY] != leaf["data"][tls.TLS_KEY_KEY]
    assert _cert(after, tls.TLS_CERT_KEY).not_valid_after_utc > now + tls_policy.LEAF_VALIDITY - dt.timedelta(days=1)
    assert _renewal_events(rig) == ["CertificateRenewed"]
    report = rig.cr()["status"]["pgbackrestTLS"]
    assert report["certificateIssuedAt"] == facts.format_time(now)
