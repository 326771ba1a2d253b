"""pgBackRest TLS material for `pgbackrestTLS.mode: auto`: a CA and one certificate for all pool pods.

Only the apply step calls this; the renderer and planner stay pure and never see key material
(plan/tls_policy.py decides from the Secrets' annotations, which `annotations_*` here derive from the
certificates themselves).

The CA Secret holds the trust bundle `ca.crt` (the signing CA first, then any other CA still
trusted), the signing key `ca.key` and, during a CA rotation, the successor `next-ca.crt` and
`next-ca.key`. Every CA has its own subject name and subject key identifier, and every certificate
names its issuer's key identifier, so a bundle of two CAs is never ambiguous to OpenSSL.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..requirements_guard import runtime_requirements

with runtime_requirements():  # requirements_guard.py: the modules check deps.py first
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..core import keys
from ..plan.tls_policy import CA_VALIDITY, LEAF_VALIDITY, Step
from ..state import facts

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
NEXT_CA_CERT_KEY = "next-ca.crt"
NEXT_CA_KEY_KEY = "next-ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"
# Backdated so a peer whose clock is a little behind accepts a certificate issued a moment ago.
BACKDATE = dt.timedelta(minutes=5)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _certs(b64: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(b64))


def _key(b64: str, field: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(base64.b64decode(b64), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{field} in the CA Secret is not an EC private key")
    return key


def key_id(cert: x509.Certificate) -> str:
    """The subject key identifier (hex), computed from the public key when the extension is absent."""
    return x509.SubjectKeyIdentifier.from_public_key(cert.public_key()).digest.hex()


def new_ca(common_name: str, now: dt.datetime) -> dict[str, str]:
    """Secret data (base64) of a fresh self-signed CA, named after its key so no two share a name."""
    key = ec.generate_private_key(ec.SECP256R1())
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key()).digest.hex()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}-ca-{ski[:16]}")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return {CA_CERT_KEY: _b64(_pem_cert(cert)), CA_KEY_KEY: _b64(_pem_key(key))}


def issue(ca_data: Mapping[str, str], common_name: str, dns_names: Sequence[str], now: dt.datetime) -> dict[str, str]:
    """Secret data (base64) of a certificate for `dns_names`, good for server and client auth, signed
    by the first CA of `ca_data`'s bundle with its `ca.key`; the bundle is copied along. It expires
    after LEAF_VALIDITY, or with its CA if that comes first."""
    ca_cert = _certs(ca_data[CA_CERT_KEY])[0]
    ca_key = _key(ca_data[CA_KEY_KEY], CA_KEY_KEY)
    if key_id(ca_cert) != x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()).digest.hex():
        raise ValueError(f"{CA_KEY_KEY} in the CA Secret is not the key of the first CA in {CA_CERT_KEY}")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(min(now + LEAF_VALIDITY, ca_cert.not_valid_after_utc))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return {TLS_CERT_KEY: _b64(_pem_cert(cert)), TLS_KEY_KEY: _b64(_pem_key(key)),
            CA_CERT_KEY: ca_data[CA_CERT_KEY]}


def _validity(cert: x509.Certificate) -> dict[str, str]:
    return {keys.ANN_TLS_ISSUED_AT: facts.format_time(cert.not_valid_before_utc + BACKDATE),
            keys.ANN_TLS_NOT_AFTER: facts.format_time(cert.not_valid_after_utc)}


def annotations_ca(ca_data: Mapping[str, str]) -> dict[str, str]:
    """The CA Secret's dates and id, read from its signing CA."""
    signer = _certs(ca_data[CA_CERT_KEY])[0]
    return {**_validity(signer), keys.ANN_TLS_CA_ID: key_id(signer)}


def annotations_leaf(leaf_data: Mapping[str, str], ca_data: Mapping[str, str]) -> dict[str, str]:
    """The certificate Secret's dates and the id of the CA that signed it."""
    signer = _certs(ca_data[CA_CERT_KEY])[0]
    return {**_validity(_certs(leaf_data[TLS_CERT_KEY])[0]), keys.ANN_TLS_ISSUER: key_id(signer)}


def _bundle(certs: Sequence[x509.Certificate], now: dt.datetime) -> str:
    """The trust bundle: each CA once, in order, expired ones dropped."""
    seen, out = set(), b""
    for cert in certs:
        if key_id(cert) not in seen and cert.not_valid_after_utc > now:
            seen.add(key_id(cert))
            out += _pem_cert(cert)
    return _b64(out)


@dataclass(frozen=True)
class Renewal:
    """What the apply step writes: the CA Secret's new data (None: unchanged; a None value removes a
    key) and annotations (a None value removes one), and the certificate Secret's data and annotations."""

    ca_data: dict[str, str | None] | None
    ca_annotations: dict[str, str | None]
    leaf_data: dict[str, str]
    leaf_annotations: dict[str, str]


def _signed(signer: Mapping[str, str], ca_data: dict[str, str | None] | None, extra: dict[str, str | None],
            common_name: str, dns_names: Sequence[str], now: dt.datetime) -> Renewal:
    leaf = issue(signer, common_name, dns_names, now)
    return Renewal(ca_data, {**annotations_ca(signer), **extra}, leaf, annotations_leaf(leaf, signer))


def renew(step: Step, ca_data: Mapping[str, str] | None, common_name: str, dns_names: Sequence[str],
          now: dt.datetime) -> Renewal:
    """Carry out a tls_policy step on the CA Secret's current data (None: no CA yet)."""
    args = (common_name, dns_names, now)
    if ca_data is None:
        created = new_ca(common_name, now)
        return _signed(created, dict(created), {}, *args)
    missing = {CA_CERT_KEY, CA_KEY_KEY} - ca_data.keys()
    if missing:
        raise ValueError(f"the CA Secret lacks {', '.join(sorted(missing))}")
    trusted = _certs(ca_data[CA_CERT_KEY])
    if step is Step.ISSUE:
        return _signed(ca_data, None, {}, *args)
    if step is Step.STAGE_CA:
        successor = new_ca(common_name, now)
        staged = {CA_CERT_KEY: _bundle([trusted[0], *_certs(successor[CA_CERT_KEY]), *trusted[1:]], now),
                  CA_KEY_KEY: ca_data[CA_KEY_KEY],
                  NEXT_CA_CERT_KEY: successor[CA_CERT_KEY], NEXT_CA_KEY_KEY: successor[CA_KEY_KEY]}
        return _signed(staged, dict(staged), {keys.ANN_TLS_CA_STAGED_AT: facts.format_time(now)}, *args)
    if not {NEXT_CA_CERT_KEY, NEXT_CA_KEY_KEY} <= ca_data.keys():
        raise ValueError(f"the CA Secret lacks {NEXT_CA_CERT_KEY}/{NEXT_CA_KEY_KEY}, the successor CA to promote")
    promoted = {CA_CERT_KEY: _bundle([*_certs(ca_data[NEXT_CA_CERT_KEY]), *trusted], now),
                CA_KEY_KEY: ca_data[NEXT_CA_KEY_KEY]}
    return _signed(promoted, {**promoted, NEXT_CA_CERT_KEY: None, NEXT_CA_KEY_KEY: None},
                   {keys.ANN_TLS_CA_STAGED_AT: None}, *args)
