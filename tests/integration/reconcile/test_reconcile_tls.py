"""pgbackrestTLS.mode auto on the real apiserver: the engine creates the CA and certificate Secrets the
pods mount, never reports key material, re-issues from the same CA when a cell is added, and then
leaves them alone."""

from __future__ import annotations

import base64
import json

import pytest
from ansible_collections.multigres.pools.plugins.module_utils import facts, keys, naming, tls
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
    first = rig.run(spec(1), diff=True)
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

    rig.settle(spec(1))
    assert not [a for a in rig.run(spec(1)).actions if a["verb"] == "generate-tls"]
    assert rig.client.get("v1", "Secret", rig.namespace, LEAF)["data"] == leaf["data"]

    two_cells = spec(1, cells=[CELL, "z2"])
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
    first = rig.run(spec(1), diff=True)
    assert [a["name"] for a in first.actions if a["verb"] == "generate-password"] == [name]
    secret = rig.client.get("v1", "Secret", rig.namespace, name)
    value = secret["data"]["password"]
    assert len(base64.b64decode(value)) >= 32
    assert value not in json.dumps([first.actions, first.plan, first.diff], default=str)

    rig.settle(spec(1))
    assert not [a for a in rig.run(spec(1)).actions if a["verb"] == "generate-password"]
    assert rig.client.get("v1", "Secret", rig.namespace, name)["data"] == {"password": value}
