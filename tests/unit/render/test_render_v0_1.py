"""The v0.1.0 rendering (shared/reference/multigres-v0.1.md §5): pod layout, golden container args,
the password file, probes, the shard-wide backup PVC, images per version, the optional exporter,
multiorch intervals and the optional multigateway."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import layout, pool_v0_1
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import render_corpus as corpus

SID = naming.ShardId("demo", "postgres", "default", "0-inf")
POD0 = naming.pod_name(SID, "default", "zone1", 0)
HEADLESS = naming.headless_service_name(SID, "default", "zone1")


def _render(patch=None, namespace="db", **kwargs):
    return render.desired_state(model.load_spec(corpus.spec(patch)), namespace, **kwargs)


def _by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def _containers(pod_spec):
    return pod_spec.get("initContainers", []) + pod_spec["containers"]


def _container(pod_spec, name):
    return next(c for c in _containers(pod_spec) if c["name"] == name)


def _deployment(desired, component, cell="zone1"):
    (dep,) = [d for d in _by_kind(desired.objects, "Deployment")
              if d["metadata"]["labels"][keys.LABEL_APP_COMPONENT] == component
              and d["metadata"]["labels"][keys.LABEL_CELL] == cell]
    return dep["spec"]["template"]["spec"]


def test_v0_1_is_the_default_with_pgctld_as_the_sidecar():
    spec = _render().pools[0].pod(0)["spec"]
    assert [(c["name"], c.get("restartPolicy")) for c in spec["initContainers"]] == [
        ("repository-check", None), ("postgres", "Always")]
    assert [(c["name"], c.get("restartPolicy")) for c in spec["containers"]] == [
        ("multipooler", None), ("postgres-exporter", None)]
    assert spec["terminationGracePeriodSeconds"] == 45 + 6  # multipooler's stop after the 6 s preStopDelay
    assert _container(spec, "postgres")["image"] == "ghcr.io/multigres/pgctld:v0.1.0"
    assert _container(spec, "multipooler")["image"] == "ghcr.io/multigres/multigres:v0.1.0"
    assert spec["hostname"] == POD0 and spec["subdomain"] == HEADLESS


def _start_check(pgdata: Path) -> None:
    """Run the first init container's command as its shell would, with PGDATA pointing at `pgdata` and
    initdb allowed (the repository side is tests/unit/plan/test_bootstrap_guard.py)."""
    spec = _render().pools[0].pod(0)["spec"]
    init = spec["initContainers"][0]
    assert {"name": "PGDATA", "value": layout.PGDATA} in init["env"]
    data = next(m for m in init["volumeMounts"] if m["mountPath"] == layout.POOLER_DIR)
    assert not data.get("readOnly")  # it writes the standby signal there
    assert init["image"] == _container(spec, "postgres")["image"]
    subprocess.run(init["command"], env={"PGDATA": str(pgdata), "PATH": "/usr/bin:/bin", "BOOTSTRAP": "initdb"},
                   check=True, timeout=10)


def _pre_stop_command(delay: str) -> list[str]:
    patch = {"pools": {"default": {"multipooler": {"preStopDelay": delay}}}}
    pooler = _container(_render(patch).pools[0].pod(0)["spec"], "multipooler")
    return pooler["lifecycle"]["preStop"]["exec"]["command"]


def _pre_stop(pgdata: Path) -> None:
    subprocess.run(_pre_stop_command("0s"), env={"PGDATA": str(pgdata), "PATH": "/usr/bin:/bin"}, check=True,
                   timeout=10)


@pytest.mark.parametrize("run", [_start_check, _pre_stop], ids=["start-check", "pre-stop"])
def test_a_data_directory_that_ran_before_starts_in_recovery(tmp_path, run):
    """Issue #24: an old primary's pod, recreated on its volume, must not start PostgreSQL writable; and
    multipooler's monitor may restart PostgreSQL after its graceful stop, so preStop writes it too."""
    (tmp_path / "PG_VERSION").write_text("17\n")
    run(tmp_path)
    assert (tmp_path / layout.STANDBY_SIGNAL).is_file()


@pytest.mark.parametrize("run", [_start_check, _pre_stop], ids=["start-check", "pre-stop"])
def test_a_new_volume_and_a_standby_are_left_as_they_are(tmp_path, run):
    run(tmp_path)  # empty: initdb or a restore fills it
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "PG_VERSION").write_text("17\n")
    (tmp_path / layout.STANDBY_SIGNAL).write_text("kept")
    run(tmp_path)
    assert (tmp_path / layout.STANDBY_SIGNAL).read_text() == "kept"


def test_the_start_check_includes_the_current_postgres_config_once_after_what_initdb_wrote(tmp_path):
    """v0.1.0's pgctld writes postgresql.conf only at initdb: the include makes every start read the
    shard's current postgresConfig (the ConfigMap pgctld mounts), after the template and initdb's copy."""
    (tmp_path / "PG_VERSION").write_text("17\n")
    conf = tmp_path / "postgresql.conf"
    conf.write_text("archive_timeout = '10s'")  # no newline at the end: the include gets a line of its own
    _start_check(tmp_path)
    _start_check(tmp_path)
    lines = conf.read_text().splitlines()
    assert lines[0] == "archive_timeout = '10s'" and lines[-1] == pool_v0_1.INCLUDE_OVERRIDES_LINE
    assert lines.count(pool_v0_1.INCLUDE_OVERRIDES_LINE) == 1
    pgctld = _container(_render({"postgresConfig": {"archive_timeout": "60s"}}).pools[0].pod(0)["spec"], "postgres")
    mount = next(m for m in pgctld["volumeMounts"] if m["name"] == layout.VOL_PG_EXTRA_CONFIG)
    included = f"{mount['mountPath']}/{layout.PG_EXTRA_CONFIG_KEY}"
    assert f"include_if_exists = '{included}'" == pool_v0_1.INCLUDE_OVERRIDES_LINE


def test_the_start_check_adds_no_postgresql_conf_where_none_is(tmp_path):
    (tmp_path / "PG_VERSION").write_text("17\n")
    _start_check(tmp_path)
    assert not (tmp_path / "postgresql.conf").exists()


def test_the_pre_stop_hook_holds_the_pooler_for_its_delay_after_the_standby_signal(tmp_path):
    """Issue #24: the pooler serves on while DNS caches forget the pod's address (the sleep must come
    before the hook's `exit 0`: a first try put it after, where it never ran)."""
    (tmp_path / "PG_VERSION").write_text("17\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sleep").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/slept\n')
    (bin_dir / "sleep").chmod(0o755)
    for delay in ("6s", "1500ms", "0s"):
        subprocess.run(_pre_stop_command(delay), env={"PGDATA": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin"},
                       check=True, timeout=10)
    assert (tmp_path / "slept").read_text().split() == ["6", "1.5"]  # 0s: no sleep at all
    assert (tmp_path / layout.STANDBY_SIGNAL).is_file()


@pytest.mark.parametrize("delay, grace", [("6s", 51), ("0s", 45), ("1500ms", 47), ("1m", 105)])
def test_the_pods_grace_covers_the_pre_stop_delay(delay, grace):
    """The kubelet counts the grace from the deletion, preStop included: multipooler's own bounded stop
    (--onterm-timeout 30 s + --onclose-timeout 10 s, then pgctld) must still fit after the delay."""
    pod = _render({"pools": {"default": {"multipooler": {"preStopDelay": delay}}}}).pools[0].pod(0)
    assert pod["spec"]["terminationGracePeriodSeconds"] == grace


@pytest.mark.parametrize("value, problem", [("61s", "at most 60s"), ("5", "pattern"), ("-1s", "pattern")])
def test_a_pre_stop_delay_out_of_bounds_is_refused_by_name(value, problem):
    with pytest.raises(model.SpecError) as refused:
        model.load_spec(corpus.spec({"pools": {"default": {"multipooler": {"preStopDelay": value}}}}))
    assert any(e.startswith("spec.pools.default.multipooler.preStopDelay") and problem in e
               for e in refused.value.errors), refused.value.errors


def _sidecar(pooler_dir: Path, *, version: bool, sentinel: bool = False) -> list[list[str]]:
    """Run the pgctld sidecar's shell as the image would, with its paths under `pooler_dir` and a
    pgctld that records how it was called (argv and PGPASSFILE); the calls, in order."""
    pgctld = _container(_render().pools[0].pod(0)["spec"], "postgres")
    pooler_dir.mkdir()
    log, fake = pooler_dir / "calls", pooler_dir / "pgctld"
    fake.write_text(f'#!/bin/sh\necho "$PGPASSFILE $*" >> {log}\n')
    fake.chmod(0o755)
    (pooler_dir / "pg_data").mkdir()
    if version:
        (pooler_dir / "pg_data" / "PG_VERSION").write_text("17\n")
    if sentinel:
        (pooler_dir / layout.BOOTSTRAP_SENTINEL).write_text("first-backup bootstrap in progress\n")
    script = pgctld["command"][2].replace(layout.POOLER_DIR, str(pooler_dir))
    subprocess.run(["/bin/sh", "-c", script, str(fake), *pgctld["args"]], env={"PATH": "/usr/bin:/bin"},
                   check=True, timeout=10)
    deadline = time.monotonic() + 10  # the early start runs in the background
    while len(log.read_text().splitlines()) < (2 if version and not sentinel else 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    return [line.split() for line in sorted(log.read_text().splitlines(), key=lambda x: "server" in x)]


def test_the_sidecar_starts_a_data_directory_that_ran_before_then_runs_pgctld(tmp_path):
    """A restarted pod's PostgreSQL starts with pgctld, not on multipooler's first monitor pass 5 s later."""
    pooler_dir = tmp_path / "pooler"
    start, server = _sidecar(pooler_dir, version=True)
    assert start == [f"{pooler_dir}/pgbackrest/pgbackrest.pgpass", "start", f"--pooler-dir={pooler_dir}",
                     "--pg-port=5432", "--pg-listen-addresses=*", "--timeout=60"]
    args = _container(_render().pools[0].pod(0)["spec"], "postgres")["args"]
    assert server == args  # exec'd as rendered: its own flags name the real pooler directory


def test_the_sidecar_leaves_a_new_volume_and_an_interrupted_first_backup_to_multipooler(tmp_path):
    assert [call[0] for call in _sidecar(tmp_path / "new", version=False)] == ["server"]
    assert [call[0] for call in _sidecar(tmp_path / "bootstrap", version=True, sentinel=True)] == ["server"]


def test_multipooler_args_golden():
    pooler = _container(_render().pools[0].pod(0)["spec"], "multipooler")
    assert pooler["command"] == ["/multigres/bin/multipooler"]
    assert pooler["args"] == [
        "--cell=zone1",
        "--database=postgres",
        "--table-group=default",
        "--shard=0-inf",
        f"--service-id={naming.service_id(POD0)}",
        f"--hostname=$(POD_NAME).{HEADLESS}.db.svc.cluster.local",
        "--topo-global-server-addresses=etcd-0.etcd:2379",
        "--topo-global-root=/multigres/global",
        "--http-port=15200",
        "--grpc-port=15270",
        "--pooler-dir=/var/lib/pooler",
        "--pg-port=5432",
        "--socket-file=/var/lib/pooler/pg_sockets/.s.PGSQL.5432",
        "--pgctld-addr=localhost:15470",
        "--pgbackrest-port=8432",
        "--pgbackrest-cert-file=/certs/pgbackrest/pgbackrest.crt",
        "--pgbackrest-key-file=/certs/pgbackrest/pgbackrest.key",
        "--pgbackrest-ca-file=/certs/pgbackrest/ca.crt",
        "--connpool-global-capacity=40",
        "--connpool-admin-capacity=5",
        "--connpool-drain-grace-period=200ms",
        "--log-level=info",
    ]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}} \
        in pooler["env"]
    assert [(p["name"], p["containerPort"]) for p in pooler["ports"]] == [("http", 15200), ("grpc", 15270)]


def test_pgctld_args_golden_with_and_without_the_optional_config():
    pgctld = _container(_render().pools[0].pod(0)["spec"], "postgres")
    assert pgctld["command"] == ["/bin/sh", "-c", pool_v0_1.EARLY_START_SCRIPT, "/usr/local/bin/pgctld"]
    assert pgctld["args"] == [
        "server",
        "--pooler-dir=/var/lib/pooler",
        "--pg-port=5432",
        "--pg-listen-addresses=*",
        "--timeout=60",
        "--http-port=15400",
        "--grpc-port=15470",
        "--grpc-socket-file=/var/lib/pooler/pgctld.sock",
        "--pg-hba-template=/etc/pgctld/pg_hba_template.conf",
        "--pgbackrest-port=8432",
        "--pgbackrest-cert-dir=/certs/pgbackrest",
        "--log-level=info",
    ]
    assert [(p["name"], p["containerPort"]) for p in pgctld["ports"]] == [
        ("pgctld-http", 15400), ("pgctld-grpc", 15470), ("postgres", 5432), ("pgbackrest", 8432)]
    full = _render({"postgresConfigRef": {"name": "tmpl"}, "postgresConfig": {"work_mem": "8MB"},
                    "initdbArgs": "--data-checksums", "logLevels": {"pgctld": "debug"}})
    pgctld = _container(full.pools[0].pod(0)["spec"], "postgres")
    assert "--postgres-config-template=/etc/pgctld-postgres/postgresql.conf.tmpl" in pgctld["args"]
    assert "--log-level=debug" in pgctld["args"]
    env = {e["name"]: e.get("value") for e in pgctld["env"]}
    assert env["POSTGRES_INITDB_EXTRA_CONF"] == "/etc/pgctld-postgres-config/postgresql.conf"
    assert env["POSTGRES_INITDB_ARGS"] == "--data-checksums"
    mounts = {m["name"]: m["mountPath"] for m in pgctld["volumeMounts"]}
    assert mounts["postgres-config-template"] == "/etc/pgctld-postgres" and mounts["postgres-config"] == \
        "/etc/pgctld-postgres-config"


def test_pgctld_and_multipooler_agree_on_the_shared_settings():
    spec = _render().pools[0].pod(0)["spec"]
    flags = {name: dict(a[2:].split("=", 1) for a in _container(spec, name)["args"] if a.startswith("--"))
             for name in ("postgres", "multipooler")}
    for flag in ("pooler-dir", "pg-port", "pgbackrest-port"):
        assert flags["postgres"][flag] == flags["multipooler"][flag], flag
    assert flags["multipooler"]["pgctld-addr"] == f"localhost:{flags['postgres']['grpc-port']}"
    assert flags["multipooler"]["socket-file"].startswith(f"{flags['postgres']['pooler-dir']}/pg_sockets/")
    envs = [{e["name"]: e for e in _container(spec, n)["env"]} for n in ("postgres", "multipooler")]
    for name in ("PGDATA", "POSTGRES_USER", "POSTGRES_PASSWORD_FILE"):
        assert envs[0][name] == envs[1][name]


def test_the_password_is_a_mounted_secret_file_never_an_env_value():
    desired = _render({"postgresPasswordSecretRef": {"name": "pg-pass", "key": "pw"},
                       "backup": {"type": "s3", "s3": {"bucket": "b-1", "region": "r", "credentialsSecret": "aws"}}})
    spec = desired.pools[0].pod(0)["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "postgres-password"]
    assert volume == {"name": "postgres-password", "secret": {
        "secretName": "pg-pass", "defaultMode": 0o440, "items": [{"key": "pw", "path": "password"}]}}
    for name in ("postgres", "multipooler"):
        container = _container(spec, name)
        env = {e["name"]: e for e in container["env"]}
        assert env["POSTGRES_PASSWORD_FILE"]["value"] == "/etc/postgres-password/password"
        assert "POSTGRES_PASSWORD" not in env
        assert {"name": "postgres-password", "mountPath": "/etc/postgres-password", "readOnly": True} in \
            container["volumeMounts"]
    for container in _containers(spec):
        for env in container.get("env", []):
            if "value" in env:  # every literal value is a path, a name or a setting, never a credential
                assert env["name"] in {"PGDATA", "POSTGRES_USER", "POSTGRES_PASSWORD_FILE", "AWS_REGION",
                                       "DATA_SOURCE_URI", "DATA_SOURCE_USER"}, env
    assert not _by_kind(render.manifests(desired), "Secret")


def test_probes_let_the_sidecar_start_and_wait_for_postgres_only_for_readiness():
    spec = _render().pools[0].pod(0)["spec"]
    pgctld, pooler = _container(spec, "postgres"), _container(spec, "multipooler")
    # The sidecar's startup probe gates multipooler's start: it must not wait for PostgreSQL,
    # which only runs once multipooler asks pgctld for it.
    assert pgctld["startupProbe"]["httpGet"] == {"path": "/live", "port": layout.PGCTLD_HTTP}
    assert pgctld["readinessProbe"]["httpGet"] == {"path": "/ready", "port": layout.PGCTLD_HTTP}
    assert pooler["livenessProbe"]["httpGet"] == {"path": "/live", "port": layout.MULTIPOOLER_HTTP}
    for container in (pgctld, pooler):
        startup = container["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 300  # generous: initdb, restore


def test_every_port_is_named_and_unique_in_the_pod():
    for patch in ({}, corpus.ERA_A):
        spec = _render(patch).pools[0].pod(0)["spec"]
        ports = [p for c in _containers(spec) for p in c.get("ports", [])]
        assert all(p["name"] and p["protocol"] == "TCP" for p in ports)
        assert len({p["name"] for p in ports}) == len(ports) == len({p["containerPort"] for p in ports})


def test_every_v0_1_container_names_its_binary():
    desired = _render({"multigateway": {"enabled": True}})
    pods = [desired.pools[0].pod(0)["spec"]] + [d["spec"]["template"]["spec"]
                                                for d in _by_kind(desired.objects, "Deployment")]
    binaries = {c["name"]: c.get("command", [None])[0] for spec in pods for c in _containers(spec)}
    assert binaries == {
        "postgres": "/bin/sh", "multipooler": "/multigres/bin/multipooler",
        "multiorch": "/multigres/bin/multiorch", "multigateway": "/multigres/bin/multigateway",
        "postgres-exporter": "/bin/postgres_exporter", "repository-check": "/bin/sh",
    }
    # The sidecar's shell starts PostgreSQL early, then execs pgctld: its $0, named here.
    assert _container(pods[0], "postgres")["command"][3] == "/usr/local/bin/pgctld"
    era_a = _render(corpus.ERA_A).pools[0].pod(0)["spec"]
    assert "command" not in _container(era_a, "postgres-exporter")  # as the Go operator renders it


names = st.from_regex(r"\A[a-z][a-z0-9-]{0,40}[a-z0-9]\Z")
cells = st.from_regex(r"\A[a-z][a-z0-9-]{0,50}[a-z0-9]\Z")  # up to the v0.1.0 limit of 52


@settings(max_examples=60, deadline=None)
@given(cluster=names, pool=names, cell=cells, index=st.integers(0, 31))
def test_service_id_and_registered_hostname_meet_multigres_limits(cluster, pool, cell, index):
    spec = model.load_spec(corpus.spec({"clusterName": cluster, "pools": None}) | {"pools": {pool: {"cells": [cell]}}})
    pod = render.desired_state(spec, "ns").pools[0].pod(index)
    pooler = _container(pod["spec"], "multipooler")
    flags = dict(a[2:].split("=", 1) for a in pooler["args"])
    # multipooler refuses underscores in the cell and the service id, and cell_name over 63 characters.
    assert "_" not in flags["service-id"] and "_" not in flags["cell"]
    assert len(f"{flags['cell']}_{flags['service-id']}") <= 63
    hostname = flags["hostname"].replace("$(POD_NAME)", pod["metadata"]["name"])
    assert hostname == f"{pod['spec']['hostname']}.{pod['spec']['subdomain']}.ns.svc.cluster.local"
    assert all(0 < len(label) <= 63 for label in hostname.split(".")) and len(hostname) <= 253


def test_the_cell_name_limit_is_v0_1_only():
    assert model.V0_1_MAX_POOL_CELL == 52
    cell = "z" * 53
    with pytest.raises(model.SpecError, match="v0-1-cell-name-length"):
        model.load_spec(corpus.spec({"pools": {"default": {"cells": [cell]}}}))
    model.load_spec(corpus.spec({"pools": {"default": {"cells": [cell]}}, **corpus.ERA_A}))
    model.load_spec(corpus.spec({"pools": {"default": {"cells": ["z" * 52]}}}))


def test_backup_pvc_is_one_per_shard_and_every_pod_mounts_it():
    desired = _render({"pools": {"default": {"cells": ["zone1", "zone2"]}, "extra": {"cells": ["zone3"]}}})
    (pvc,) = _by_kind(desired.objects, "PersistentVolumeClaim")
    assert pvc["metadata"]["name"] == naming.shard_backup_pvc_name(SID)
    assert keys.LABEL_CELL not in pvc["metadata"]["labels"]
    claims = {v["persistentVolumeClaim"]["claimName"] for pool in desired.pools
              for v in pool.pod(0)["spec"]["volumes"] if v["name"] == "backup-data"}
    assert claims == {pvc["metadata"]["name"]}
    rwx = _render({"backup": {"filesystem": {"storage": {"accessModes": ["ReadWriteMany"], "class": "nfs"}}}})
    (pvc,) = _by_kind(rwx.objects, "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"] and pvc["spec"]["storageClassName"] == "nfs"
    s3 = _render({"backup": {"type": "s3", "s3": {"bucket": "b-1", "region": "r"}}})
    assert _by_kind(s3.objects, "PersistentVolumeClaim") == []


def test_images_follow_the_version_unless_set_and_a_version_change_rolls_the_pods():
    v01, era_a = _render(), _render(corpus.ERA_A)
    images = {c["name"]: c["image"] for c in _containers(era_a.pools[0].pod(0)["spec"])}
    assert images["multipooler"] == "ghcr.io/multigres/multigres:sha-d782aa0"
    assert images["postgres"] == "ghcr.io/multigres/pgctld:sha-d782aa0"
    assert _deployment(era_a, "multiorch")["containers"][0]["image"] == "ghcr.io/multigres/multigres:sha-d782aa0"
    assert _deployment(v01, "multiorch")["containers"][0]["image"] == "ghcr.io/multigres/multigres:v0.1.0"
    assert v01.pools[0].spec_hash != era_a.pools[0].spec_hash
    pinned = _render({"images": {"postgres": "registry.local/pgctld:17", "multipooler": "registry.local/mg:1"},
                      **corpus.ERA_A})
    images = {c["name"]: c["image"] for c in _containers(pinned.pools[0].pod(0)["spec"])}
    assert (images["postgres"], images["multipooler"]) == ("registry.local/pgctld:17", "registry.local/mg:1")
    # The model keeps what the user wrote: the CR in Git never pins the version's defaults.
    assert model.load_spec(corpus.spec()).images.postgres is None


@pytest.mark.parametrize("patch", [{}, corpus.ERA_A], ids=["v0.1.0", "era-a"])
def test_the_exporter_can_be_turned_off(patch):
    off = _render({**patch, "monitoring": {"postgresExporter": {"enabled": False}}})
    pod = off.pools[0].pod(0)
    assert "postgres-exporter" not in [c["name"] for c in _containers(pod["spec"])]
    assert not any(k.startswith("prometheus.io/") for k in pod["metadata"]["annotations"])
    (svc,) = [s for s in _by_kind(off.objects, "Service") if s["spec"].get("clusterIP") == "None"]
    assert "metrics" not in [p["name"] for p in svc["spec"]["ports"]]
    on = _render(patch).pools[0].pod(0)
    assert on["metadata"]["annotations"][keys.ANN_PROMETHEUS_PORT] == "9187"


def test_headless_service_ports():
    (svc,) = [s for s in _by_kind(_render().objects, "Service") if s["spec"].get("clusterIP") == "None"]
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("http", 15200), ("grpc", 15270), ("postgres", 5432), ("pgbackrest", 8432), ("metrics", 9187)]
    assert svc["spec"]["publishNotReadyAddresses"] is True


def test_multiorch_v0_1_args_intervals_and_failover_grace():
    spec = _deployment(_render({"multiorch": {"poolerHealthCheckInterval": "500ms", "recoveryCycleInterval": "1.5s",
                                              "failoverGracePeriod": "20s", "failoverGracePeriodMaxJitter": "0s"}}),
                       "multiorch")
    (orch,) = spec["containers"]
    assert orch["command"] == ["/multigres/bin/multiorch"]
    assert orch["args"] == [
        "--http-port=15300", "--grpc-port=15370",
        "--topo-global-server-addresses=etcd-0.etcd:2379", "--topo-global-root=/multigres/global",
        "--cell=zone1", "--watch-targets=postgres/default/0-inf", "--log-level=info",
        "--service-id=$(POD_NAME)", "--hostname=$(POD_IP)",
        "--pooler-health-check-interval=500ms", "--recovery-cycle-interval=1.5s",
        "--leader-failover-grace-period-base=20s", "--leader-failover-grace-period-max-jitter=0s",
    ]
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in orch["env"]} == {
        "POD_NAME": "metadata.name", "POD_IP": "status.podIP"}
    assert orch["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 15300}
    default = _deployment(_render(), "multiorch")["containers"][0]["args"]
    assert not any("interval" in a or "grace" in a for a in default)


def test_era_a_multiorch_takes_the_intervals_too_and_nothing_else_new():
    (orch,) = _deployment(_render({"multiorch": {"recoveryCycleInterval": "500ms"}, **corpus.ERA_A}),
                          "multiorch")["containers"]
    assert orch["args"][0] == "multiorch" and "command" not in orch and "env" not in orch
    assert orch["args"][-1] == "--recovery-cycle-interval=500ms"
    assert not any(a.startswith(("--hostname", "--service-id")) for a in orch["args"])


def test_multigateway_is_off_by_default_and_per_cell_when_enabled():
    assert not [o for o in _render().objects if o["metadata"]["labels"].get(keys.LABEL_APP_COMPONENT) ==
                keys.COMPONENT_MULTIGATEWAY]
    desired = _render({"pools": {"default": {"cells": ["zone1", "zone2"]}},
                       "multigateway": {"enabled": True, "replicas": 2, "cells": ["zone2"]},
                       "logLevels": {"multigateway": "debug"}})
    gateway = [o for o in desired.objects
               if o["metadata"]["labels"].get(keys.LABEL_APP_COMPONENT) == keys.COMPONENT_MULTIGATEWAY]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in gateway) == [
        ("Deployment", naming.multigateway_deployment_name(SID, "zone2")),
        ("Service", naming.multigateway_service_name(SID, "zone2"))]
    dep = next(o for o in gateway if o["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 2
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/multigres/bin/multigateway"]
    assert container["args"] == [
        "--http-port=15100", "--grpc-port=15170", "--pg-port=15432",
        "--topo-global-server-addresses=etcd-0.etcd:2379", "--topo-global-root=/multigres/global",
        "--cell=zone2", "--log-level=debug", "--service-id=$(POD_NAME)", "--hostname=$(POD_IP)"]
    assert container["startupProbe"]["httpGet"]["path"] == "/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    svc = next(o for o in gateway if o["kind"] == "Service")
    assert {"name": "postgres", "port": 5432, "targetPort": 15432, "protocol": "TCP"} in svc["spec"]["ports"]
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert dep["spec"]["template"]["metadata"]["labels"].items() >= svc["spec"]["selector"].items()


def test_the_failover_buffer_flags_appear_only_when_enabled():
    def gateway_args(buffer):
        desired = _render({"multigateway": {"enabled": True, "failoverBuffer": buffer}})
        (container,) = _deployment(desired, keys.COMPONENT_MULTIGATEWAY)["containers"]
        return [a for a in container["args"] if a.startswith("--buffer")]

    assert gateway_args({}) == [] and gateway_args({"window": "5s"}) == []
    assert gateway_args({"enabled": True}) == ["--buffer-enabled=true"]
    assert gateway_args({"enabled": True, "window": "4500ms"}) == ["--buffer-enabled=true", "--buffer-window=4500ms"]
    for bad, problem in (("0s", "window must be greater than zero"), ("5 s", "should match pattern")):
        with pytest.raises(model.SpecError) as refused:
            model.load_spec(corpus.spec({"multigateway": {"enabled": True, "failoverBuffer": {"window": bad}}}))
        assert "spec.multigateway.failoverBuffer.window" in str(refused.value) and problem in str(refused.value)


def test_version_and_durations_in_the_model():
    assert model.load_spec(corpus.spec()).multigres.version is keys.MultigresVersion.V0_1_0
    assert model.load_spec(corpus.spec(corpus.ERA_A)).multigres.version is keys.MultigresVersion.ERA_A
    assert model.go_duration_seconds("1h1m1.5s250ms") == 3661.75
    assert model.spec_to_dict(model.load_spec(corpus.spec()))["multigres"] == {"version": "v0.1.0"}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789.mshu ", max_size=10))
def test_interval_accepted_exactly_when_go_would_parse_it_as_positive(text):
    spec = corpus.spec({"multiorch": {"poolerHealthCheckInterval": text}})
    valid = re.fullmatch(model.GO_DURATION_PATTERN, text) is not None and model.go_duration_seconds(text) > 0
    try:
        model.load_spec(spec)
    except model.SpecError as err:
        assert not valid and all(e.startswith("spec.multiorch.poolerHealthCheckInterval") for e in err.errors)
    else:
        assert valid


def test_render_is_deterministic_for_every_v0_1_object():
    patch = {"pools": {"default": {"cells": ["a", "b"]}}, "multigateway": {"enabled": True},
             "multiorch": {"poolerHealthCheckInterval": "500ms"}}
    assert render.manifests(_render(patch)) == render.manifests(_render(patch))


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.y*ml")),
                         ids=lambda p: p.name)
def test_every_example_declares_its_version_and_renders(path):
    doc = yaml.safe_load(path.read_text())
    shard = doc.get("multigres_shard", doc)
    assert shard["spec"]["multigres"]["version"] in set(keys.MultigresVersion)
    desired = render.desired_state(model.load_spec(shard["spec"]), "ns")
    assert render.manifests(desired)


def test_multipooler_drains_connections_for_200ms_unless_told_otherwise():
    """Issue #24: the primary's replacement waits for this drain before the election can start, and v0.1.0
    refuses every new request from SIGTERM on, so only statements already running can use it."""
    def drain_args(patch=None):
        pooler = _container(_render(patch).pools[0].pod(0)["spec"], "multipooler")
        return [a for a in pooler["args"] if a.startswith("--connpool-drain-grace-period=")]

    assert drain_args() == ["--connpool-drain-grace-period=200ms"]
    patch = {"pools": {"default": {"multipooler": {"connectionDrainGracePeriod": "2500ms"}}}}
    assert drain_args(patch) == ["--connpool-drain-grace-period=2500ms"]
    assert drain_args({"pools": {"default": {"multipooler": {"connectionDrainGracePeriod": "1ms"}}}}) == [
        "--connpool-drain-grace-period=1ms"]


@pytest.mark.parametrize("value, problem", [("21s", "at most 20s"), ("1GB", "pattern"), ("-1s", "pattern"),
                                            ("0s", "must be greater than zero"), ("0ms", "reads 0 as no bound")])
def test_a_drain_grace_period_out_of_bounds_is_refused_by_name(value, problem):
    with pytest.raises(model.SpecError) as refused:
        model.load_spec(corpus.spec({"pools": {"default": {"multipooler": {"connectionDrainGracePeriod": value}}}}))
    assert any(e.startswith("spec.pools.default.multipooler.connectionDrainGracePeriod") and problem in e
               for e in refused.value.errors), refused.value.errors
