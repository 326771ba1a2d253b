"""The process kubelet's pure rules: Kubernetes `$(VAR)` expansion, env and command resolution,
the hosts file that plays cluster DNS, probe thresholds, image-table messages and pod phases."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pytest

from multigres_pools.playground import poddns, podenv, probes
from multigres_pools.playground.podenv import ConfigError, ImageSpec, Lookup
from multigres_pools.playground.process_kubelet import _repository, _term_matches

POD = {"metadata": {"name": "pool-0", "namespace": "ns", "uid": "u1", "labels": {"app": "pool", "tier": "db"}},
       "spec": {"hostname": "pool-0", "subdomain": "pool", "nodeName": "n1"},
       "status": {"podIP": "10.200.0.2", "podIPs": [{"ip": "10.200.0.2"}],
                  "conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.mark.parametrize(("text", "expected"), [
    ("$(A)-$(B)", "1-2"),
    ("$$(A)", "$(A)"),          # $$ escapes
    ("$(MISSING)", "$(MISSING)"),  # undefined stays as written
    ("$A $(A", "$A $(A"),
    ("$$$(A)", "$1"),
])
def test_expand_follows_kubernetes(text: str, expected: str) -> None:
    assert podenv.expand(text, {"A": "1", "B": "2"}) == expected


def _lookup(configmaps: dict, secrets: dict) -> Lookup:
    return Lookup(lambda ns, n: configmaps.get(n), lambda ns, n: secrets.get(n))


def test_container_env_orders_and_expands_and_reads_refs() -> None:
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "X_"}], "env": [
        {"name": "A", "value": "a"},
        {"name": "B", "value": "$(A)-$(C)"},  # C is defined later: not expanded
        {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "TIER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}},
        {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}}},
    ]}
    env = podenv.container_env(POD, container, _lookup({"cm": {"level": "debug"}}, {"s": {"k": "secret"}}))
    assert env == {"X_level": "debug", "A": "a", "B": "a-$(C)", "C": "secret", "IP": "10.200.0.2", "TIER": "db"}


def test_missing_refs_are_config_errors_naming_the_field() -> None:
    container = {"name": "c", "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "k"}}}]}
    with pytest.raises(ConfigError, match="container 'c' env 'P': secret 'pw' not found"):
        podenv.container_env(POD, container, _lookup({}, {}))
    with pytest.raises(ConfigError, match=r"fieldPath 'spec\.bogus' is not supported"):
        podenv.field_ref(POD, "spec.bogus")


def test_command_line_uses_image_entrypoint_only_without_command() -> None:
    image = ImageSpec(path_dirs=["/x"], entrypoint=["/bin/multigres"], cmd=["--help"])
    assert podenv.command_line({"name": "c", "args": ["multipooler", "--x=$(V)"]}, image, {"V": "1"}) == \
        ["/bin/multigres", "multipooler", "--x=1"]
    assert podenv.command_line({"name": "c"}, image, {}) == ["/bin/multigres", "--help"]
    assert podenv.command_line({"name": "c", "command": ["/usr/local/bin/pgctld"], "args": ["server"]}, image, {}) \
        == ["/usr/local/bin/pgctld", "server"]
    with pytest.raises(ConfigError, match="no command"):
        podenv.command_line({"name": "c"}, ImageSpec(path_dirs=[]), {})


def test_find_executable_by_basename_in_the_image_only() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        _check_find_executable(Path(scratch))


def _check_find_executable(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # only the file's own mode should decide below
    tool = tmp_path / "pgctld"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    image = ImageSpec(path_dirs=[str(tmp_path)])
    assert podenv.find_executable("/usr/local/bin/pgctld", "img", image, 65534, 65534) == str(tool)
    with pytest.raises(ConfigError, match="executable 'sh' not found in image 'img'"):
        podenv.find_executable("sh", "img", image, 65534, 65534)
    tool.chmod(0o700)
    with pytest.raises(ConfigError, match="not executable by uid 65534"):
        podenv.find_executable("pgctld", "img", image, 65534, 65534)


def test_hosts_file_lists_own_fqdn_first_then_services() -> None:
    other = {"metadata": {"name": "pool-1", "namespace": "ns", "labels": {"app": "pool"}},
             "spec": {"hostname": "pool-1", "subdomain": "pool"}, "status": {"podIP": "10.200.0.3"}}
    orch = {"metadata": {"name": "orch-x", "namespace": "ns", "labels": {"app": "orch"}}, "spec": {},
            "status": {"podIP": "10.200.0.4", "conditions": [{"type": "Ready", "status": "True"}]}}
    not_ready = {"metadata": {"name": "orch-y", "namespace": "ns", "labels": {"app": "orch"}}, "spec": {},
                 "status": {"podIP": "10.200.0.5"}}
    services = [
        {"metadata": {"name": "pool", "namespace": "ns"},
         "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"app": "pool"}}},
        {"metadata": {"name": "orch", "namespace": "ns"},
         "spec": {"clusterIP": "10.96.0.9", "selector": {"app": "orch"}}},
    ]
    text = poddns.hosts_file(POD, "10.200.0.2", [POD, other, orch, not_ready], services, "cluster.local")
    lines = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    assert lines[2] == ["10.200.0.2", "pool-0.pool.ns.svc.cluster.local pool-0"]
    pairs = {(ip, name) for ip, names in lines for name in names.split()}
    assert ("10.200.0.3", "pool-1.pool.ns.svc.cluster.local") in pairs
    assert ("10.200.0.3", "pool-1.pool") in pairs
    assert ("10.200.0.4", "orch.ns.svc.cluster.local") in pairs and ("10.200.0.4", "orch") in pairs
    assert not any(ip == "10.200.0.5" for ip, _ in pairs)  # not Ready: no endpoint
    assert poddns.resolve("orch.ns.svc", [POD, other, orch], services, "cluster.local") == ["10.200.0.4"]


def test_dns_answers_as_endpointslices_and_coredns_do_for_terminating_and_unlabelled_pods() -> None:
    """A Service publishing not-ready addresses keeps a terminating pod's name (its EndpointSlice
    marks it ready, and CoreDNS answers ready endpoints); without that flag, or once the pod no longer
    matches the selector (a finished drain takes the DNS label off), the name is gone."""
    def pod(name: str, labels: dict[str, str], *, terminating: bool = False, ready: bool = True,
            phase: str = "Running") -> dict:
        meta = {"name": name, "namespace": "ns", "labels": labels}
        if terminating:
            meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
        return {"metadata": meta, "spec": {"hostname": name, "subdomain": "pool"},
                "status": {"podIP": f"10.200.0.{len(name)}", "phase": phase,
                           "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    published = {"app": "pool", "dns": "published"}
    service = {"metadata": {"name": "pool", "namespace": "ns"},
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": published}}
    pods = [pod("a", published, terminating=True), pod("bb", {"app": "pool"}), pod("ccc", published, ready=False),
            pod("dddd", published, phase="Failed")]
    assert [p["metadata"]["name"] for p in poddns.endpoints(service, pods)] == ["a", "ccc"]
    assert poddns.resolve("a.pool.ns.svc.cluster.local", pods, [service], "cluster.local") == ["10.200.0.1"]
    assert poddns.resolve("bb.pool.ns.svc.cluster.local", pods, [service], "cluster.local") == []
    strict = {**service, "spec": {**service["spec"], "publishNotReadyAddresses": False}}
    assert poddns.endpoints(strict, pods) == []  # a is terminating, ccc not Ready, dddd terminal


def test_prober_thresholds_and_schedule() -> None:
    prober = probes.Prober({"httpGet": {"port": 1}, "initialDelaySeconds": 5, "periodSeconds": 2,
                            "failureThreshold": 2, "successThreshold": 2}, started_at=100.0)
    assert not prober.due(104.9) and prober.due(105.0)
    prober.record(False, "boom", 105.0)
    assert not prober.failed and prober.next_at == 107.0
    prober.record(False, "boom", 107.0)
    assert prober.failed
    prober.record(True, "", 109.0)
    assert not prober.succeeded and not prober.failed
    prober.record(True, "", 111.0)
    assert prober.succeeded
    assert probes.unsupported({"grpc": {"port": 1}}) == "grpc"
    assert probes.unsupported({"exec": {"command": ["true"]}}) is None
    assert probes.resolve_port("http", {"name": "c", "ports": [{"name": "http", "containerPort": 15200}]}) == 15200


def test_image_repository_and_node_affinity() -> None:
    assert _repository("ghcr.io/multigres/multigres:sha-d782aa0") == "ghcr.io/multigres/multigres"
    assert _repository("localhost:5000/x/y:1") == "localhost:5000/x/y"
    assert _repository("busybox") == "busybox"
    labels = {"zone": "a"}
    assert _term_matches({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}, labels)
    assert not _term_matches({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, labels)


def test_secret_data_is_decoded() -> None:
    assert podenv.decode_secret({"k": base64.b64encode(b"v").decode()}) == {"k": "v"}
