"""`spec.globalTopoServer.address` has one spelling: every normalisation rule, every refusal naming
the field, and the model applying it (so renders and the agent see the same identity)."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.spec import topology_address as ta
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import GlobalTopoServer
from pydantic import ValidationError


@pytest.mark.parametrize(("raw", "normal"), [
    ("etcd:2379", "etcd:2379"),  # already normal: unchanged (renders stay byte-identical)
    ("etcd-a:2379,etcd-b:2379", "etcd-a:2379,etcd-b:2379"),
    (" etcd:2379 ", "etcd:2379"),  # whitespace stripped
    ("ETCD.Db.SVC:2379", "etcd.db.svc:2379"),  # host lowercased
    ("http://etcd:2379", "etcd:2379"),  # the default scheme dropped
    ("HTTP://etcd:2379", "etcd:2379"),
    ("HTTPS://Etcd:2379", "https://etcd:2379"),  # TLS kept, spelled in lowercase
    ("etcd:02379", "etcd:2379"),  # port as a number
    ("etcd:2379,ETCD:2379,http://etcd:2379", "etcd:2379"),  # duplicates dropped
    ("b:2379,a:2379", "b:2379,a:2379"),  # the user's order is the dialling order
    ("10.0.0.1:2379", "10.0.0.1:2379"),
    ("[0:0:0:0:0:0:0:1]:2379", "[::1]:2379"),
    ("[FE80::1]:2379", "[fe80::1]:2379"),
    ("etcd.db.svc.cluster.local.:2379", "etcd.db.svc.cluster.local.:2379"),  # absolute names kept
])
def test_normal_form(raw: str, normal: str) -> None:
    assert ta.normalize(raw) == normal
    assert ta.normalize(normal) == normal  # idempotent


def test_identity_ignores_order_and_spelling() -> None:
    assert ta.identity("b:2379, A:2379") == ta.identity("http://a:2379,b:2379,b:2379") == "a:2379,b:2379"
    assert ta.identity("a:2379") != ta.identity("https://a:2379")
    assert ta.endpoints(("http://B:1", "a:2")) == ("b:1", "a:2")


@pytest.mark.parametrize(("raw", "problem"), [
    ("etcd:2379,", "empty endpoint"),
    (",etcd:2379", "empty endpoint"),
    ("etcd:2379,,b:2379", "empty endpoint"),
    ("etcd", "missing port"),
    ("http://etcd", "missing port"),
    ("::1", "missing port"),
    ("etcd:", "port ''"),
    ("etcd:0", "port '0'"),
    ("etcd:65536", "port '65536'"),
    ("etcd:https", "port 'https'"),
    ("etcd:\uff12\uff13\uff17\uff19", "port '\uff12\uff13\uff17\uff19'"),  # full-width digits
    ("unix://etcd:2379", "only http:// and https://"),
    ("grpc://etcd:2379", "only http:// and https://"),
    ("http://http://etcd:2379", "only http:// and https://"),
    ("etcd:2379/v3", "no path"),
    ("user@etcd:2379", "no path"),
    ("etc_d:2379", "host must be"),
    ("-etcd:2379", "host must be"),
    ("etcd..db:2379", "host must be"),
    (":2379", "host must be"),
    ("999.1.1.1:2379", "not a valid IPv4"),
    ("[::g]:2379", "not a valid IPv6"),
    ("a" * 64 + ":2379", "host must be"),
])
def test_refusals_name_the_field_and_the_problem(raw: str, problem: str) -> None:
    with pytest.raises(ta.TopologyAddressError) as err:
        ta.normalize(raw)
    assert str(err.value).startswith("spec.globalTopoServer.address: ")
    assert problem in str(err.value)


def test_the_model_stores_the_normal_form_and_refuses_bad_lists() -> None:
    assert GlobalTopoServer(address="HTTP://Etcd:2379,etcd:2379,b:2379").address == "etcd:2379,b:2379"
    with pytest.raises(ValidationError, match=r"spec\.globalTopoServer\.address: endpoint 'etcd': missing port"):
        GlobalTopoServer(address="etcd")
