"""The engine's API client trusts what kubectl trusts: the kubeconfig's CA alone when it names one,
the system's roots only when it does not."""

from __future__ import annotations

import ssl
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.kube.client import Credentials

from multigres_pools.playground import pki


def test_a_kubeconfig_ca_is_the_only_trust_anchor(tmp_path: Path) -> None:
    ca = pki.generate(tmp_path).ca_cert.read_bytes()
    ctx = Credentials(server="https://127.0.0.1:6443", ca_data=ca).ssl_context()
    trusted = ctx.get_ca_certs()
    assert [dict(c["subject"][0])["commonName"] for c in trusted] == ["multigres-pools-test-ca"]
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname


def test_without_a_ca_the_system_roots_are_trusted() -> None:
    system = ssl.create_default_context().cert_store_stats()["x509_ca"]
    ctx = Credentials(server="https://example.invalid").ssl_context()
    assert ctx.cert_store_stats()["x509_ca"] == system
    assert ctx.verify_mode == ssl.CERT_REQUIRED


def test_insecure_checks_nothing(tmp_path: Path) -> None:
    ca = pki.generate(tmp_path).ca_cert.read_bytes()
    ctx = Credentials(server="https://127.0.0.1:6443", ca_data=ca, insecure=True).ssl_context()
    assert ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname
