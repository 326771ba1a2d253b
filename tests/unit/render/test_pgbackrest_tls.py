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
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import tls
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

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


def _handshake(files, server_hostname: str, client_files=None) -> dict:  # type: ignore[no-untyped-def]
    """One client/server handshake, the server presenting `files`, the client `client_files` (the
    same by default: two pods of one shard); returns the client certificate as the server saw it."""
    client_files = client_files or files
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files["crt"], files["key"])
    server_ctx.load_verify_locations(files["ca"])
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED by default
    client_ctx.load_verify_locations(client_files["ca"])
    client_ctx.load_cert_chain(client_files["crt"], client_files["key"])
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


def _pod_files(directory: Path, renewal: tls.Renewal, ca_data: dict) -> dict[str, Path]:
    """What a pod mounts after `renewal`: the CA Secret's bundle and the certificate Secret's pair."""
    directory.mkdir()
    return {"ca": _write(directory, "ca.crt", ca_data[tls.CA_CERT_KEY]),
            "crt": _write(directory, "pgbackrest.crt", renewal.leaf_data[tls.TLS_CERT_KEY]),
            "key": _write(directory, "pgbackrest.key", renewal.leaf_data[tls.TLS_KEY_KEY])}


def _merged(ca_data: dict, renewal: tls.Renewal) -> dict:
    """The CA Secret's data after the apply step's merge patch."""
    out = {**ca_data, **(renewal.ca_data or {})}
    return {k: v for k, v in out.items() if v is not None}


def test_ca_rotation_keeps_every_pair_of_pods_talking_across_each_step(tmp_path):
    """A pod still holding the previous step's files talks to one holding the next step's, both ways:
    staging adds the successor to the trust bundle before it signs anything. A pod with only the old
    CA meeting the new CA's certificate is refused, which is why the overlap exists."""
    gen = render.desired_state(model.load_spec(corpus.spec({})), "db").generated_tls
    assert gen is not None
    now = dt.datetime.now(dt.UTC)  # OpenSSL checks validity against the real clock
    host = gen.dns_names[0].replace("*", "pod-0")
    created = tls.renew(tls.Step.ISSUE, None, gen.common_name, gen.dns_names, now)
    ca_created = _merged({}, created)
    staged = tls.renew(tls.Step.STAGE_CA, ca_created, gen.common_name, gen.dns_names, now)
    ca_staged = _merged(ca_created, staged)
    promoted = tls.renew(tls.Step.PROMOTE_CA, ca_staged, gen.common_name, gen.dns_names, now)
    ca_promoted = _merged(ca_staged, promoted)
    assert set(ca_promoted) == {tls.CA_CERT_KEY, tls.CA_KEY_KEY}  # the successor's keys were moved, not kept
    old = _pod_files(tmp_path / "old", created, ca_created)
    mid = _pod_files(tmp_path / "mid", staged, ca_staged)
    new = _pod_files(tmp_path / "new", promoted, ca_promoted)
    for a, b in ((old, mid), (mid, new)):
        _handshake(a, host, client_files=b)
        _handshake(b, host, client_files=a)
    for a, b in ((old, new), (new, old)):  # mutual TLS: the old pod cannot verify the new certificate
        with pytest.raises(ssl.SSLCertVerificationError):
            _handshake(a, host, client_files=b)
    assert staged.ca_annotations[keys.ANN_TLS_CA_ID] == created.ca_annotations[keys.ANN_TLS_CA_ID]
    assert promoted.ca_annotations[keys.ANN_TLS_CA_ID] != created.ca_annotations[keys.ANN_TLS_CA_ID]
    assert promoted.leaf_annotations[keys.ANN_TLS_ISSUER] == promoted.ca_annotations[keys.ANN_TLS_CA_ID]


def test_a_certificate_never_outlives_its_ca():
    gen = render.desired_state(model.load_spec(corpus.spec({})), "db").generated_tls
    assert gen is not None
    old_ca = tls.new_ca(gen.common_name, NOW - tls.CA_VALIDITY + dt.timedelta(days=10))
    leaf = tls.renew(tls.Step.ISSUE, old_ca, gen.common_name, gen.dns_names, NOW)
    assert leaf.leaf_annotations[keys.ANN_TLS_NOT_AFTER] == leaf.ca_annotations[keys.ANN_TLS_NOT_AFTER]
