"""pgbackrestTLS.mode auto: the renderer declares the material, the planner asks for it only when it is
missing or its names changed, and the certificate really chains to the CA it ships with."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import replace

from ansible_collections.multigres.pools.plugins.module_utils import keys, model, render, tls
from ansible_collections.multigres.pools.plugins.module_utils.actions import Verb
from ansible_collections.multigres.pools.plugins.module_utils.plan import plan
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from .plan_factories import NOW, desired, healthy, observed

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


def test_planner_generates_only_what_is_missing_or_stale():
    gen, missing = _plan_with([])
    assert len(missing) == 1 and missing[0].reason.startswith("create pgBackRest CA Secret")
    _, leaf_missing = _plan_with([_secret(gen.ca_secret)])
    assert len(leaf_missing) == 1 and leaf_missing[0].reason.startswith("issue pgBackRest certificate")
    current = {keys.ANN_TLS_FINGERPRINT: gen.fingerprint}
    _, nothing = _plan_with([_secret(gen.ca_secret), _secret(gen.tls_secret, current)])
    assert nothing == []
    _, stale = _plan_with([_secret(gen.ca_secret), _secret(gen.tls_secret, {keys.ANN_TLS_FINGERPRINT: "old"})])
    assert len(stale) == 1 and "re-issue" in stale[0].reason
    assert "key" not in stale[0].as_dict()


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
