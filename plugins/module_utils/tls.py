"""pgBackRest TLS material for `pgbackrestTLS.mode: auto`: a CA and one certificate for all pool pods.

Only the apply step calls this; the renderer and planner stay pure and never see key material.
The CA Secret keeps its key so a change of names (a new pool or cell) re-issues the certificate
from the same CA, and pods that trust the old bundle keep trusting the new certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence

from .requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=825)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def new_ca(common_name: str, now: dt.datetime) -> dict[str, str]:
    """Secret data (base64) of a fresh self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}-ca")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return {CA_CERT_KEY: _b64(_pem_cert(cert)), CA_KEY_KEY: _b64(_pem_key(key))}


def issue(ca_data: Mapping[str, str], common_name: str, dns_names: Sequence[str], now: dt.datetime) -> dict[str, str]:
    """Secret data (base64) of a certificate for `dns_names`, good for server and client auth, signed
    by the CA in `ca_data` (as returned by `new_ca` or read back from its Secret)."""
    ca_cert = x509.load_pem_x509_certificate(base64.b64decode(ca_data[CA_CERT_KEY]))
    ca_key = serialization.load_pem_private_key(base64.b64decode(ca_data[CA_KEY_KEY]), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{CA_KEY_KEY} in the CA Secret is not an EC private key")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + LEAF_VALIDITY)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return {TLS_CERT_KEY: _b64(_pem_cert(cert)), TLS_KEY_KEY: _b64(_pem_key(key)),
            CA_CERT_KEY: ca_data[CA_CERT_KEY]}
