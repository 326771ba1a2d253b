"""Authentication on by default, on real Multigres v0.1.0 and PostgreSQL 17 (issue 12): a shard
rendered with the default pg_hba serves with two synchronous standbys while every login needs the
password (SCRAM-SHA-256, no `trust` line anywhere), a wrong or missing password is refused at the
primary and through the multigateway, the right one works at both, standbys stream with
multipooler's pgpass file, a standby's pgBackRest backup (TLS to the primary, then the primary's
socket) succeeds, and the password shows up in no log, Event, ConfigMap or status. Run once with the
Secret the engine generates and once with a Secret of the user's own (`postgresPasswordSecretRef`)."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.render import layout
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from multigres_pools.dataplane.base import ShardTopology
from multigres_pools.dataplane.v0_1 import V0_1
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

pytestmark = [pytest.mark.multigres, pytest.mark.cluster]
SHARD = "play"
OWN_SECRET = "play-own-password"


@dataclass
class Shard:
    stack: MultigresStack
    own_secret: bool

    @property
    def password(self) -> str:
        return self.stack.password(SHARD)


def _own_secret(stack: MultigresStack) -> None:
    # Any character but ':' and '\\', which Multigres writes unescaped into its pgpass files.
    password = secrets.token_urlsafe(18) + "!#%&*()+=~"
    kube = stack.kube()
    try:
        kube.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                     "metadata": {"name": OWN_SECRET, "namespace": stack.namespace},
                     "data": {"password": base64.b64encode(password.encode()).decode()}}, field_manager="test")
    finally:
        kube.close()


@pytest.fixture(scope="module", params=["generated", "own-secret"])
def shard(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          toolchain: object) -> Iterator[Shard]:
    own = request.param == "own-secret"
    stack = MultigresStack(tmp_path_factory.mktemp(f"auth-{request.param}"),
                           progress=lambda line: print(line, flush=True))
    try:
        stack.start()
        doc = stack.sample_shard(replicas=3, name=SHARD)
        if own:
            _own_secret(stack)
            doc["spec"]["postgresPasswordSecretRef"] = {"name": OWN_SECRET, "key": "password"}
        stack.apply_shard(doc)
        stack.wait_serving(SHARD, replicas=3, timeout=400)
        yield Shard(stack, own)
    finally:
        stack.stop()


def _connect(host: str, port: int, password: str | None) -> psycopg.Connection:
    extra = {"password": password} if password is not None else {}
    # passfile: never fall back on a ~/.pgpass of this machine.
    return psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", connect_timeout=5,
                           passfile="/nonexistent", autocommit=True, **extra)


def _gateway(stack: MultigresStack) -> tuple[str, int]:
    def ready() -> str | None:
        pods = [p for p in stack.pods(keys.COMPONENT_MULTIGATEWAY) if facts.condition_true(p, "Ready")]
        return pods[0]["status"]["podIP"] if pods else None

    return wait_for(ready, 180, "a Ready multigateway", interval=1), layout.MULTIGATEWAY_PG


def _primary(stack: MultigresStack) -> str:
    ip = stack.primary_ip(SHARD)
    assert ip is not None
    return ip


def test_every_login_needs_scram_and_standbys_stream_with_the_pgpass_file(shard: Shard) -> None:
    stack = shard.stack
    with _connect(_primary(stack), layout.POSTGRES, shard.password) as conn:
        rules = conn.execute("SELECT type, database, user_name, address, auth_method, error "
                             "FROM pg_hba_file_rules ORDER BY rule_number").fetchall()
        assert rules and {r[4] for r in rules} == {"scram-sha-256"}, rules
        assert all(r[5] is None for r in rules), rules
        replication = [r for r in rules if r[1] == ["replication"]]
        assert replication and all(r[0] == "host" and r[2] == ["postgres"] for r in replication), replication
        assert conn.execute("SHOW password_encryption").fetchone() == ("scram-sha-256",)
        (verifier,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'").fetchone()
        assert verifier.startswith("SCRAM-SHA-256$")
        states = [s for (s,) in conn.execute("SELECT sync_state FROM pg_stat_replication").fetchall()]
        assert sorted(states) in (["sync", "sync"], ["quorum", "quorum"]), states
    for member in [m for m in stack.members(SHARD) if not m.primary]:
        with _connect(member.ip, layout.POSTGRES, shard.password) as conn:
            status, conninfo = conn.execute("SELECT status, conninfo FROM pg_stat_wal_receiver").fetchone()
        assert status == "streaming"
        assert "passfile=" in conninfo and "password=" not in conninfo, conninfo


@pytest.mark.parametrize("where", ["primary", "gateway"])
def test_a_wrong_or_missing_password_is_refused_and_the_right_one_works(shard: Shard, where: str) -> None:
    stack = shard.stack
    host, port = (_primary(stack), layout.POSTGRES) if where == "primary" else _gateway(stack)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _connect(host, port, shard.password + "x")
    with pytest.raises(psycopg.OperationalError, match="password"):
        _connect(host, port, None)
    with _connect(host, port, shard.password) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS auth_check (via text)")
        conn.execute("INSERT INTO auth_check VALUES (%s)", (where,))
    with _connect(_primary(stack), layout.POSTGRES, shard.password) as conn:
        assert (where,) in conn.execute("SELECT via FROM auth_check").fetchall()


def test_a_standbys_pgbackrest_backup_authenticates_at_both_ends(shard: Shard) -> None:
    stack = shard.stack
    plane = V0_1(dial_host=stack.dial_host, rpc_timeout=300)
    try:
        topo = ShardTopology((stack.topo_address,), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))
        poolers = plane.list_poolers(topo)
        leader = plane.leader(poolers)
        assert leader is not None
        standby = next(p for p in poolers if p.role is keys.Role.REPLICA)
        backup_id = plane.take_backup(standby, "full", f"issue12-{shard.own_secret}")
        assert any(b.backup_id == backup_id and b.complete for b in plane.get_backups(leader, 0))
    finally:
        plane.close()


def test_the_secret_is_the_users_or_the_generated_one_never_both(shard: Shard) -> None:
    stack = shard.stack
    kube = stack.kube()
    try:
        cr = kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD)
        assert cr is not None
        generated = naming.password_secret_name(model.load_spec(cr["spec"]).shard_id)
        present = kube.get("v1", "Secret", stack.namespace, generated) is not None
        mounted = {v["secret"]["secretName"] for p in stack.pods() for v in p["spec"]["volumes"]
                   if v["name"] == layout.VOL_PASSWORD}
        policy = kube.list("networking.k8s.io/v1", "NetworkPolicy", stack.namespace, "")
    finally:
        kube.close()
    assert present is not shard.own_secret
    assert mounted == {OWN_SECRET if shard.own_secret else generated}
    # The operator applied the shard's NetworkPolicy (the process kubelet does not enforce it).
    assert [facts.name(p) for p in policy] == [f"{generated.removesuffix('-postgres-password')}-network-policy"]


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []


def test_the_password_is_in_no_log_event_configmap_or_status(shard: Shard) -> None:
    stack, password = shard.stack, shard.password
    logs = [stack.workdir / "operator.log", stack.workdir / "agent.log",
            *_files(stack.workdir / "runner"), *_files(stack.kubelet.workdir / "logs")]  # type: ignore[union-attr]
    leaked = [str(p) for p in logs if password.encode() in p.read_bytes()]
    assert leaked == [], f"the password is written in {leaked}"
    kube = stack.kube()
    try:
        texts = [str(e) for e in kube.list("v1", "Event", stack.namespace, "")]
        texts += [str(c.get("data")) for c in kube.list("v1", "ConfigMap", stack.namespace, "")]
        texts.append(str(kube.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, stack.namespace, SHARD)))
    finally:
        kube.close()
    assert not [t for t in texts if password in t]
