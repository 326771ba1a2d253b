"""The process kubelet against the real API server: toy pods run as local processes, each in its own
network namespace, as the unprivileged user; statuses, probes, restarts, DNS, volumes, deletion
order and error reports are what a kubelet would write."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess

import pytest
from kubernetes import client

from .conftest import (
    TOY_IMAGE,
    condition,
    container_status,
    eventually,
    make_kubelet,
    read_pod,
    toy,
    toy_pod,
)

pytestmark = pytest.mark.cluster


@pytest.fixture
def core(kube) -> client.CoreV1Api:  # type: ignore[no-untyped-def]
    return client.CoreV1Api(kube.api_client())


def _pod_when(core, namespace: str, name: str, check, what: str, timeout: float = 90) -> dict:  # type: ignore[no-untyped-def]
    seen: list[dict | None] = [None]

    def probe() -> dict | None:
        seen[0] = read_pod(core, namespace, name)
        return seen[0] if seen[0] and check(seen[0]) else None
    try:
        return eventually(probe, timeout, what=f"pod {name} {what}")  # type: ignore[return-value]
    except AssertionError as err:
        raise AssertionError(f"{err}; last status: {json.dumps((seen[0] or {}).get('status'))}") from None


def running(core, namespace: str, name: str) -> dict:  # type: ignore[no-untyped-def]
    return _pod_when(core, namespace, name, lambda p: p["status"].get("phase") == "Running", "Running")


def ready(core, namespace: str, name: str, timeout: float = 90) -> dict:  # type: ignore[no-untyped-def]
    return _pod_when(core, namespace, name, lambda p: condition(p, "Ready"), "Ready", timeout)


def delete_and_wait(core, namespace: str, name: str, timeout: float = 90) -> None:  # type: ignore[no-untyped-def]
    core.delete_namespaced_pod(name, namespace)
    eventually(lambda: read_pod(core, namespace, name) is None, timeout, what=f"pod {name} gone")


def exec_ok(kubelet, namespace: str, pod: str, container: str, *args: str) -> str:  # type: ignore[no-untyped-def]
    result = kubelet.exec(namespace, pod, container, ["toy", *args])
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def events(core, namespace: str, pod: str) -> list:  # type: ignore[no-untyped-def]
    return [e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == pod]


def test_each_pod_has_its_own_ip_and_localhost_and_runs_unprivileged(core, namespace, process_kubelet):
    core.create_namespaced_pod(namespace, toy_pod("a", toy("c", "serve", "--port", "8000", "--name", "a")))
    core.create_namespaced_pod(namespace, toy_pod("b", toy("c", "run", "--name", "b")))
    pod_a, pod_b = running(core, namespace, "a"), running(core, namespace, "b")
    ip_a, ip_b = pod_a["status"]["podIP"], pod_b["status"]["podIP"]
    assert ip_a != ip_b and ip_a.rsplit(".", 1)[0] == process_kubelet.host_ip.rsplit(".", 1)[0]
    assert pod_a["spec"]["nodeName"] == process_kubelet.node_name  # bound by the kubelet: no scheduler runs
    assert pod_a["status"]["hostIP"] == process_kubelet.host_ip
    eventually(lambda: "start a" in process_kubelet.logs(namespace, "a", "c"), what="server a up")
    eventually(lambda: "start b" in process_kubelet.logs(namespace, "b", "c"), what="b up")

    def connects(pod: str, host: str) -> bool:
        return process_kubelet.exec(namespace, pod, "c", ["toy", "connect", host, "8000"]).returncode == 0

    assert connects("a", "127.0.0.1")
    assert not connects("b", "127.0.0.1")  # b's localhost is its own: a's server is not there
    assert connects("b", ip_a)
    # From the root namespace too (where the agent and tests live), through the bridge.
    socket.create_connection((ip_a, 8000), 3).close()

    uid, gid, hostname, _ = exec_ok(process_kubelet, namespace, "a", "c", "whoami").split()
    assert (int(uid), int(gid)) == (process_kubelet.uid, process_kubelet.gid) and int(uid) != 0
    assert hostname == "a"
    assert f"uid={process_kubelet.uid}" in process_kubelet.logs(namespace, "a", "c")
    pid = process_kubelet._worker(namespace, "a").container("c").run.container_pid
    with open(f"/proc/{pid}/status") as handle:
        uids = next(line for line in handle if line.startswith("Uid:")).split()[1:]
    assert set(uids) == {str(process_kubelet.uid)}


def test_headless_service_names_resolve_inside_pods(core, namespace, process_kubelet):
    core.create_namespaced_service(namespace, {"metadata": {"name": "pool"}, "spec": {
        "clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"app": "pool"},
        "ports": [{"port": 8000}]}})
    for name in ("pool-0", "pool-1"):
        core.create_namespaced_pod(namespace, toy_pod(name, toy("c", "run"), hostname=name, subdomain="pool",
                                                      labels={"app": "pool"}))
    ip0 = running(core, namespace, "pool-0")["status"]["podIP"]
    running(core, namespace, "pool-1")
    names = [f"pool-0.pool.{namespace}.svc.cluster.local", f"pool-0.pool.{namespace}.svc", "pool-0.pool"]
    for name in names:
        eventually(lambda name=name: exec_ok(process_kubelet, namespace, "pool-1", "c", "resolve", name).strip() == ip0,
                   what=f"{name} resolves in pool-1")
    assert exec_ok(process_kubelet, namespace, "pool-1", "c", "resolve", "localhost").strip() == "127.0.0.1"
    # The pod's own FQDN is what Multigres publishes: hostname, then a reverse lookup of the pod IP.
    assert exec_ok(process_kubelet, namespace, "pool-0", "c", "whoami").split()[3] == names[0]
    assert process_kubelet.resolve(names[0]) == [ip0]


def test_pvc_data_survives_recreation_but_empty_dir_does_not(core, namespace, process_kubelet):
    core.create_namespaced_persistent_volume_claim(namespace, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    pod = toy_pod("p", toy("c", "run", volumeMounts=[{"name": "data", "mountPath": "/var/lib/pooler"},
                                                      {"name": "scratch", "mountPath": "/scratch"}]),
                  volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                           {"name": "scratch", "emptyDir": {}}])
    core.create_namespaced_pod(namespace, pod)
    running(core, namespace, "p")
    assert core.read_namespaced_persistent_volume_claim("data", namespace).status.phase == "Bound"
    exec_ok(process_kubelet, namespace, "p", "c", "write", "/var/lib/pooler/kept", "pvc")
    exec_ok(process_kubelet, namespace, "p", "c", "write", "/scratch/lost", "empty")
    _, uid, _ = exec_ok(process_kubelet, namespace, "p", "c", "stat", "/var/lib/pooler").split()
    assert int(uid) == process_kubelet.uid  # fsGroup-like ownership, so Multigres can write its pooler dir
    assert not os.path.exists("/var/lib/pooler/kept")  # the mount point exists only inside the pod
    delete_and_wait(core, namespace, "p")
    core.create_namespaced_pod(namespace, pod)
    running(core, namespace, "p")
    eventually(lambda: process_kubelet.exec(namespace, "p", "c", ["toy", "whoami"]).returncode == 0, what="p runs")
    assert exec_ok(process_kubelet, namespace, "p", "c", "cat", "/var/lib/pooler/kept") == "pvc"
    assert process_kubelet.exec(namespace, "p", "c", ["toy", "cat", "/scratch/lost"]).returncode != 0
    assert (process_kubelet.pvc_path(namespace, "data") / "kept").read_text() == "pvc"


def test_configmap_and_secret_files_and_env(core, namespace, process_kubelet):
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"},
                                                  "data": {"pg_hba.conf": "local all all trust\n", "level": "debug"}})
    secret = base64.b64encode(b"s3cret").decode()
    core.create_namespaced_secret(namespace, {"metadata": {"name": "pw"}, "data": {"password": secret}})
    container = toy("c", "run", "--name", "$(GREETING)-$(LEVEL)", volumeMounts=[
        {"name": "cfg", "mountPath": "/etc/pgctld", "readOnly": True},
        {"name": "certs", "mountPath": "/certs/pgbackrest", "readOnly": True},
        {"name": "info", "mountPath": "/etc/podinfo"}],
        env=[{"name": "GREETING", "value": "hi"},
             {"name": "DERIVED", "value": "$(GREETING) there $$(NOT)"},
             {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "password"}}},
             {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
             {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        envFrom=[{"configMapRef": {"name": "cm"}, "prefix": "CM_"}])
    container["env"].append({"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "level"}}})
    pod = toy_pod("p", container, volumes=[
        {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "pg_hba.conf", "path": "pg_hba_template.conf"}]}},
        {"name": "certs", "secret": {"secretName": "pw", "defaultMode": 0o400}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}],
        securityContext={"fsGroup": 999})
    core.create_namespaced_pod(namespace, pod)
    ip = running(core, namespace, "p")["status"]["podIP"]
    eventually(lambda: "start hi-debug" in process_kubelet.logs(namespace, "p", "c"), what="args expanded")
    assert exec_ok(process_kubelet, namespace, "p", "c", "cat", "/etc/pgctld/pg_hba_template.conf") == \
        "local all all trust\n"
    assert exec_ok(process_kubelet, namespace, "p", "c", "cat", "/certs/pgbackrest/password") == "s3cret"
    # Under the pod's fsGroup the kubelet adds group read to the 0400 it was asked for; root keeps the file.
    assert exec_ok(process_kubelet, namespace, "p", "c", "stat", "/certs/pgbackrest/password").split() == \
        ["440", "0", str(process_kubelet.gid)]
    assert exec_ok(process_kubelet, namespace, "p", "c", "cat", "/etc/podinfo/labels") == 'app="p"\n'
    env = json.loads(exec_ok(process_kubelet, namespace, "p", "c", "env"))
    assert env["DERIVED"] == "hi there $(NOT)"
    assert env["POSTGRES_PASSWORD"] == "s3cret"
    assert (env["POD_NAME"], env["POD_IP"], env["CM_level"]) == ("p", ip, "debug")
    assert env["HOSTNAME"] == "p"
    # Files follow ConfigMap changes, as the kubelet refreshes them.
    core.patch_namespaced_config_map("cm", namespace, {"data": {"pg_hba.conf": "host all all 0.0.0.0/0 trust\n"}})
    eventually(lambda: "0.0.0.0/0" in exec_ok(process_kubelet, namespace, "p", "c", "cat",
                                              "/etc/pgctld/pg_hba_template.conf"), what="configMap refreshed")


def test_readiness_probe_flips_ready(core, namespace, process_kubelet):
    probe = {"httpGet": {"path": "/ready", "port": 8000}, "periodSeconds": 1, "failureThreshold": 1}
    core.create_namespaced_pod(namespace, toy_pod("p", toy("c", "serve", "--ready-file", "/tmp/ready",
                                                           readinessProbe=probe)))
    pod = running(core, namespace, "p")
    assert not condition(pod, "Ready")
    exec_ok(process_kubelet, namespace, "p", "c", "write", "/tmp/ready", "")
    pod = ready(core, namespace, "p")
    assert condition(pod, "ContainersReady") and container_status(pod, "c")["ready"]
    exec_ok(process_kubelet, namespace, "p", "c", "rm", "/tmp/ready")
    eventually(lambda: not condition(read_pod(core, namespace, "p"), "Ready"), what="Ready turns False")


def _set_gate(core, namespace: str, name: str, status: str) -> None:  # type: ignore[no-untyped-def]
    core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [
        {"type": "example.com/gate", "status": status}]}})


def test_readiness_gate_holds_ready_until_its_condition_is_true(core, namespace, process_kubelet):
    """As the kubelet does: Ready needs ready containers and every readiness gate's condition True; the
    condition, set by another component, survives the kubelet's own status writes."""
    pod = toy_pod("g", toy("c", "serve"))
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/gate"}]
    core.create_namespaced_pod(namespace, pod)
    seen = _pod_when(core, namespace, "g", lambda p: condition(p, "ContainersReady"), "ContainersReady")
    assert not condition(seen, "Ready"), "no condition for the gate yet"
    _set_gate(core, namespace, "g", "True")
    ready(core, namespace, "g")
    _set_gate(core, namespace, "g", "False")
    eventually(lambda: not condition(read_pod(core, namespace, "g"), "Ready"), what="Ready turns False")
    assert condition(read_pod(core, namespace, "g"), "ContainersReady")


def test_liveness_failure_restarts_the_container(core, namespace, process_kubelet):
    probe = {"httpGet": {"path": "/live", "port": 8000}, "periodSeconds": 1, "failureThreshold": 2}
    core.create_namespaced_pod(namespace, toy_pod("p", toy("c", "serve", "--live-for", "2", livenessProbe=probe)))
    pod = _pod_when(core, namespace, "p", lambda p: container_status(p, "c").get("restartCount", 0) >= 1,
                    "restarted")
    assert container_status(pod, "c")["lastState"]["terminated"]["finishedAt"]  # the killed run
    assert "term toy" in process_kubelet.logs(namespace, "p", "c", previous=True)  # stopped with SIGTERM first
    assert any(e.reason == "Killing" and "liveness" in e.message for e in events(core, namespace, "p"))


def test_exit_with_restart_policy_never_fails_the_pod(core, namespace, process_kubelet):
    core.create_namespaced_pod(namespace, toy_pod("p", toy("c", "exit", "--code", "3"), restartPolicy="Never"))
    pod = eventually(lambda: (p := read_pod(core, namespace, "p")) and p["status"].get("phase") == "Failed" and p,
                     what="phase Failed")
    terminated = container_status(pod, "c")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert container_status(pod, "c")["restartCount"] == 0
    assert "exiting with 3" in process_kubelet.logs(namespace, "p", "c")


def test_exit_zero_with_on_failure_succeeds(core, namespace, process_kubelet):
    core.create_namespaced_pod(namespace, toy_pod("p", toy("c", "exit", "--code", "0"), restartPolicy="OnFailure"))
    eventually(lambda: read_pod(core, namespace, "p")["status"].get("phase") == "Succeeded", what="Succeeded")


def test_graceful_deletion_sigterm_then_sigkill_after_grace(core, namespace, process_kubelet):
    keep = "test.multigres.io/keep"  # a finalizer keeps the pod readable after the kubelet's final delete
    for name, extra in (("polite", []), ("stubborn", ["--ignore-term"])):
        pod = toy_pod(name, toy("c", "run", "--name", name, *extra), terminationGracePeriodSeconds=2)
        pod["metadata"]["finalizers"] = [keep]
        core.create_namespaced_pod(namespace, pod)
    for name in ("polite", "stubborn"):
        running(core, namespace, name)
        eventually(lambda name=name: f"start {name}" in process_kubelet.logs(namespace, name, "c"), what="started")
        core.delete_namespaced_pod(name, namespace)
    for name, code, phase in (("polite", 0, "Succeeded"), ("stubborn", 137, "Failed")):
        pod = eventually(lambda name=name: (p := read_pod(core, namespace, name))
                         and p["status"].get("phase") in ("Succeeded", "Failed") and p, what=f"{name} terminal")
        assert f"term {name}" in process_kubelet.logs(namespace, name, "c")  # SIGTERM reached the process
        assert container_status(pod, "c")["state"]["terminated"]["exitCode"] == code
        assert pod["status"]["phase"] == phase
        core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
        eventually(lambda name=name: read_pod(core, namespace, name) is None, what=f"{name} removed")


def test_native_sidecars_start_in_order_and_stop_after_the_main_container(core, namespace, process_kubelet):
    core.create_namespaced_persistent_volume_claim(namespace, {"metadata": {"name": "order"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    mount = [{"name": "order", "mountPath": "/order"}]
    record = ["--record", "/order/log"]

    def sidecar(name: str, port: str) -> dict:
        return toy(name, "serve", "--port", port, "--name", name, *record, restartPolicy="Always", volumeMounts=mount,
                   startupProbe={"tcpSocket": {"port": int(port)}, "periodSeconds": 1})
    pod = toy_pod("p", toy("main", "run", "--name", "main", *record, volumeMounts=mount),
                  initContainers=[sidecar("sidecar-1", "8001"),
                                  toy("init", "write", "/order/init", "done", volumeMounts=mount),
                                  sidecar("sidecar-2", "8002")],
                  volumes=[{"name": "order", "persistentVolumeClaim": {"claimName": "order"}}])
    core.create_namespaced_pod(namespace, pod)
    pod = ready(core, namespace, "p")
    assert container_status(pod, "init")["state"]["terminated"]["reason"] == "Completed"
    assert all(container_status(pod, n)["started"] for n in ("sidecar-1", "sidecar-2", "main"))
    log = process_kubelet.pvc_path(namespace, "order") / "log"
    eventually(lambda: "start main" in log.read_text(), what="main started")
    delete_and_wait(core, namespace, "p")
    lines = [line.split(" uid=")[0] for line in log.read_text().splitlines()]
    assert lines == ["start sidecar-1", "start sidecar-2", "start main",
                     "term main", "term sidecar-2", "term sidecar-1"]
    assert (process_kubelet.pvc_path(namespace, "order") / "init").read_text() == "done"


def test_unknown_image_and_unsupported_volume_are_reported(core, namespace, process_kubelet):
    from ansible_collections.multigres.pools.plugins.module_utils.core import keys
    from ansible_collections.multigres.pools.plugins.module_utils.spec.model import RELEASE_IMAGES

    era_a_image = RELEASE_IMAGES[keys.MultigresVersion.ERA_A].multigres

    core.create_namespaced_pod(namespace, toy_pod("era-a", {"name": "multipooler", "image": era_a_image,
                                                            "args": ["multipooler"]}))
    core.create_namespaced_pod(namespace, toy_pod("hostpath", toy("c", "run", volumeMounts=[
        {"name": "h", "mountPath": "/h"}]), volumes=[{"name": "h", "hostPath": {"path": "/etc"}}]))

    def waiting(name: str, container: str) -> dict:
        return (container_status(read_pod(core, namespace, name), container).get("state") or {}).get("waiting") or {}

    era_a = eventually(lambda: waiting("era-a", "multipooler").get("reason") == "ErrImagePull"
                       and waiting("era-a", "multipooler"), what="ErrImagePull")
    assert era_a["message"] == (f"image {era_a_image!r} is not available on this machine: only "
                                "ghcr.io/multigres/multigres:v0.1.0 is")
    eventually(lambda: any(era_a["message"] in e.message and e.type == "Warning"
                           for e in events(core, namespace, "era-a")), what="an Event names the image")
    hostpath = eventually(lambda: waiting("hostpath", "c").get("reason") == "CreateContainerConfigError"
                          and waiting("hostpath", "c"), what="CreateContainerConfigError")
    assert "volume 'h': hostPath volumes are not supported" in hostpath["message"]
    eventually(lambda: any(e.reason == "FailedMount" for e in events(core, namespace, "hostpath")), what="FailedMount")
    assert read_pod(core, namespace, "era-a")["status"]["phase"] == "Pending"


def test_deployment_pods_come_from_the_real_controllers_and_serve_their_service(core, namespace, process_kubelet, kube):
    apps = client.AppsV1Api(kube.api_client())
    labels = {"app": "web"}
    probe = {"httpGet": {"path": "/", "port": 8000}, "periodSeconds": 1}
    apps.create_namespaced_deployment(namespace, {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"terminationGracePeriodSeconds": 2, "containers": [
            toy("web", "serve", "--port", "8000", readinessProbe=probe)]}}}})
    core.create_namespaced_service(namespace, {"metadata": {"name": "web"}, "spec": {
        "selector": labels, "ports": [{"port": 8000}]}})
    try:
        eventually(lambda: apps.read_namespaced_deployment("web", namespace).status.available_replicas == 2,
                   timeout=90, what="Deployment available")
    except AssertionError as err:
        pods = [(p.metadata.name, p.spec.node_name, p.status.phase, p.status.container_statuses)
                for p in core.list_namespaced_pod(namespace).items]
        raise AssertionError(f"{err}; pods: {pods}") from None
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    ips = {p.status.pod_ip for p in pods}
    assert len(ips) == 2 and all(p.spec.node_name == process_kubelet.node_name for p in pods)
    core.create_namespaced_pod(namespace, toy_pod("client", toy("c", "run")))
    running(core, namespace, "client")
    fqdn = f"web.{namespace}.svc.cluster.local"
    answer = eventually(lambda: set(exec_ok(process_kubelet, namespace, "client", "c", "resolve", fqdn).split()),
                        what="service name resolves")
    assert answer <= ips
    assert process_kubelet.exec(namespace, "client", "c", ["toy", "connect", fqdn, "8000"]).returncode == 0
    assert process_kubelet.exec(namespace, "client", "c", ["toy", "connect", "web", "8000"]).returncode == 0


def test_stop_leaves_no_process_netns_veth_or_bridge(kube, namespace, toy_image):
    from multigres_pools.playground import podnet

    core = client.CoreV1Api(kube.api_client())
    kubelet = make_kubelet(kube, toy_image, namespace=namespace).start()
    try:
        # Bound up front: the package's kubelet watches every namespace and would otherwise race for it.
        core.create_namespaced_pod(namespace, toy_pod("p", toy("c", "serve"), nodeName=kubelet.node_name))
        running(core, namespace, "p")
        eventually(lambda: kubelet._worker(namespace, "p").container("c").run.container_pid, what="pid known")
        worker = kubelet._worker(namespace, "p")
        pids = [worker.container("c").run.popen.pid, worker.container("c").run.container_pid]
        assert any(n.startswith(kubelet.instance) for n in podnet.netns_names())
    finally:
        kubelet.stop()
    prefix = kubelet.instance
    assert not [n for n in podnet.netns_names() if n.startswith(prefix)]
    assert not [n for n in podnet.link_names() if n.startswith(prefix)]
    assert not kubelet.workdir.exists()
    for pid in pids:
        eventually(lambda pid=pid: not _alive(pid), what=f"pid {pid} gone after stop()")


def _alive(pid: int) -> bool:
    """A zombie waiting for the machine's init to reap it counts as dead."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in handle)
    except FileNotFoundError:
        return False


def test_sweep_removes_what_a_crashed_instance_left(process_kubelet):
    from multigres_pools.playground import podnet

    dead = podnet.new_instance_id()
    netns, bridge = f"{dead}-p2", f"{dead}-br"
    podnet.ip("netns", "add", netns)
    podnet.ip("link", "add", bridge, "type", "bridge")
    orphan = subprocess.Popen(["ip", "netns", "exec", netns, "sleep", "300"])
    try:
        inode = os.stat(f"/run/netns/{netns}").st_ino
        eventually(lambda: os.stat(f"/proc/{orphan.pid}/ns/net").st_ino == inode, what="orphan inside the netns")
        removed = podnet.sweep(dead)
        assert f"netns/{netns}" in removed and f"link/{bridge}" in removed
        assert orphan.wait(10) == -9
        podnet.sweep()  # every dead instance on the machine, but never a live one:
        assert f"{process_kubelet.instance}-br" in podnet.link_names()
    finally:
        orphan.kill()
        podnet.ip("netns", "del", netns, check=False)
        podnet.ip("link", "del", bridge, check=False)


def test_commands_resolve_in_the_image_only(core, namespace, process_kubelet):
    core.create_namespaced_pod(namespace, toy_pod("p", {"name": "c", "image": TOY_IMAGE, "command": ["sleep", "60"]}))
    state = eventually(lambda: (container_status(read_pod(core, namespace, "p"), "c").get("state") or {})
                       .get("waiting", {}) or {}, what="waiting")
    state = eventually(lambda: (w := (container_status(read_pod(core, namespace, "p"), "c")["state"]["waiting"] or {}))
                       .get("reason") == "CreateContainerConfigError" and w, what="sleep is not in the image")
    assert f"executable 'sleep' not found in image {TOY_IMAGE!r}" in state["message"]
