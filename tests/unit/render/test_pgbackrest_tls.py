"""The generated pgBackRest certificate works where v0.1.0 uses it: a replica's pgBackRest client
dials the primary at the hostname its multipooler registered (`--hostname`), and the primary's
server accepts only client CN `pgbackrest`. Checked with real TLS handshakes (OpenSSL through the
ssl module, in memory), the way both ends verify each other."""

from __future__ import annotations

import base64
import datetime as dt
import ssl
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils import model, render, tls

from tests import render_corpus as corpus

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def _write(directory: Path, name: str, b64: str) -> Path:
    path = directory / name
    path.write_bytes(base64.b64decode(b64))
    return path


@pytest.fixture()
def issued(tmp_path):
    desired = render.desired_state(model.load_spec(corpus.spec({"pools": {"default": {"cells": ["zone1", "zone2"]}}})),
                                   "db")
    gen = desired.generated_tls
    assert gen is not None
    ca = tls.new_ca(gen.common_name, NOW)
    leaf = tls.issue(ca, gen.common_name, gen.dns_names, NOW)
    files = {"ca": _write(tmp_path, "ca.crt", ca[tls.CA_CERT_KEY]),
             "crt": _write(tmp_path, "pgbackrest.crt", leaf[tls.TLS_CERT_KEY]),
             "key": _write(tmp_path, "pgbackrest.key", leaf[tls.TLS_KEY_KEY])}
    return desired, files


def _registered_hostname(pod) -> str:
    pooler = next(c for c in pod["spec"]["containers"] if c["name"] == "multipooler")
    flag = next(a for a in pooler["args"] if a.startswith("--hostname="))
    return flag.split("=", 1)[1].replace("$(POD_NAME)", pod["metadata"]["name"])


def _handshake(files, server_hostname: str) -> dict:
    """One client/server handshake, both presenting the shard's certificate; returns the client
    certificate as the server saw it."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files["crt"], files["key"])
    server_ctx.load_verify_locations(files["ca"])
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED by default
    client_ctx.load_verify_locations(files["ca"])
    client_ctx.load_cert_chain(files["crt"], files["key"])
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(to_client, to_server, server_hostname=server_hostname)
    s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, end in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(to_server.read())
        to_client.write(s_out.read())
        if all(done.values()):
            return server.getpeercert()
    raise AssertionError("handshake did not finish")


def test_every_pods_registered_hostname_verifies_and_the_client_cn_is_pgbackrest(issued):
    desired, files = issued
    for pool in desired.pools:
        for index in (0, 2, 31):
            peer = _handshake(files, _registered_hostname(pool.pod(index)))
            assert dict(x[0] for x in peer["subject"])["commonName"] == "pgbackrest"


def test_a_name_outside_the_shard_is_refused(issued):
    desired, files = issued
    wrong_namespace = _registered_hostname(desired.pools[0].pod(0)).replace(".db.svc.", ".other.svc.")
    with pytest.raises(ssl.SSLCertVerificationError, match=r"Hostname mismatch|doesn't match"):
        _handshake(files, wrong_namespace)
