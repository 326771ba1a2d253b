"""Certificates and keys for the test cluster: a CA, the API server's serving certificate, an admin
client certificate (group system:masters) and the service-account signing key pair; and, for mutual
TLS between the processes of a shard, a CA with one certificate for both ends (`issue_mutual`)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public: Path
    sa_private: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=2)))


def _leaf(path_cert: Path, path_key: Path, subject: x509.Name, ca_key: ec.EllipticCurvePrivateKey,
          ca_name: x509.Name, usage: list[x509.ObjectIdentifier], sans: list[x509.GeneralName] | None = None) -> None:
    key = _key()
    builder = _builder(subject, ca_name, key.public_key()).add_extension(
        x509.ExtendedKeyUsage(usage), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    path_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(path_key, key)


def _ca(path: Path, cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Name]:
    ca_key = _key()
    ca_name = _name(cn)
    ca = (_builder(ca_name, ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return ca_key, ca_name


@dataclass(frozen=True)
class MutualTLS:
    ca_cert: Path
    cert: Path
    key: Path


def issue_mutual(directory: Path, dns_names: list[str]) -> MutualTLS:
    """A new CA and one certificate signed by it, valid for `dns_names` (wildcards allowed), usable
    as a server and as a client certificate: every process of a shard presents the same one."""
    directory.mkdir(parents=True, exist_ok=True)
    files = MutualTLS(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    ca_key, ca_name = _ca(files.ca_cert, "multigres-pools-grpc-test-ca")
    _leaf(files.cert, files.key, _name("multigres-grpc"), ca_key, ca_name,
          [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], [x509.DNSName(n) for n in dns_names])
    return files


def generate(directory: Path, addresses: tuple[str, ...] = ()) -> Pki:
    """The harness CA, the API server's serving certificate (127.0.0.1 and `addresses`: a real node's
    bridge address and the `kubernetes` Service's ClusterIP), an admin client and the SA key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(*(directory / n for n in ("ca.crt", "serving.crt", "serving.key", "admin.crt", "admin.key",
                                        "sa.pub", "sa.key")))
    ca_key, ca_name = _ca(pki.ca_cert, "multigres-pools-test-ca")
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in (
        "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local")]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", *addresses)]
    # Client auth too: etcd's HTTP gateway dials its own gRPC port with the serving certificate, which
    # etcd with --client-cert-auth then checks as a client certificate.
    _leaf(pki.serving_cert, pki.serving_key, _name("kube-apiserver"), ca_key, ca_name,
          [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], sans)
    _leaf(pki.admin_cert, pki.admin_key, _name("admin", "system:masters"), ca_key, ca_name,
          [ExtendedKeyUsageOID.CLIENT_AUTH])
    sa_key = _key()
    _write_key(pki.sa_private, sa_key)
    pki.sa_public.write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki
