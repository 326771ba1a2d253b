"""Every image `make images` builds runs under containerd and runc as its numeric non-root user,
and does what the bundle, the renderer and the Ansible Operator expect of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import layout

from multigres_pools.images import catalog
from multigres_pools.images.build import Built
from multigres_pools.images.buildah import read_archive
from multigres_pools.install import bundle
from multigres_pools.playground import ansible_operator
from multigres_pools.playground.containerd import Containerd, image_config
from tests.helpers.collection import REPO

pytestmark = pytest.mark.images


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def _run_as_image(ctrd: Containerd, image: Built, args: list[str], **kwargs: object) -> str:
    """args after the image's own ENTRYPOINT, with a read-only root and an emptyDir-like /tmp,
    as the bundle's Deployments run it."""
    return ctrd.run(image.ref, args, archive=Path(image.archive), entrypoint=True, read_only=True,
                    tmpfs=("/tmp",), **kwargs)  # type: ignore[arg-type]  # run's keyword arguments


# The execution environment's bases are build stage stand-ins (uid 0 while ansible-builder installs);
# pause has no `id` to run (test_node_images reads its uid from the host). The pools and Ansible
# Operator -deps images run as their image's user, so they are checked too.
@pytest.mark.parametrize("name", [r.name for r in catalog.RECIPES if r.user != 0 and r.name != "pause"])
def test_each_image_runs_as_its_numeric_non_root_user(ctrd: Containerd, built: dict[str, Built], name: str) -> None:
    image = built[name]
    config = image_config(Path(image.archive))
    uid = config.user.split(":")[0]
    assert uid.isdigit() and int(uid) == catalog.BY_NAME[name].user != 0, config.user
    assert ctrd.run(image.ref, ["id", "-u"]).strip() == uid
    assert config.labels["org.opencontainers.image.version"] == catalog.BY_NAME[name].version
    assert image.digest.startswith("sha256:") and image.compressed_bytes > 0


@pytest.mark.parametrize("name", ["pools", "ansible-operator", "execution-environment"])
def test_our_code_is_a_thin_top_over_the_deps_image(built: dict[str, Built], name: str) -> None:
    """The image's layers are its -deps image's, the very blobs, and a few of our own on top: a
    code change rebuilds, and a registry transfers, only those."""
    base = catalog.BY_NAME[name].base
    assert base == f"{name}-deps"
    image, deps = built[name], built[base]
    layers = read_archive(Path(image.archive)).manifest["layers"]
    below = [layer["digest"] for layer in read_archive(Path(deps.archive)).manifest["layers"]]
    assert [layer["digest"] for layer in layers[:len(below)]] == below
    own = layers[len(below):]
    # One layer a stage: the EE's ansible-builder base stage commits one of its own (its pip.conf).
    assert 1 <= len(own) <= 2 and sum(layer["size"] for layer in own) < image.compressed_bytes / 10, own


def test_project_image_is_what_the_bundle_names(ctrd: Containerd, built: dict[str, Built]) -> None:
    pools = built["pools"]
    assert pools.ref == bundle.DEFAULT_IMAGE == keys.POOLS_IMAGE
    for deployment in ("operator-deployment.yaml", "agent-deployment.yaml"):
        text = (REPO / "manifests" / deployment).read_text()
        assert f"image: {pools.ref}" in text and "- multigres-pools" in text
    assert _run_as_image(ctrd, pools, ["--version"]).strip() == f"multigres-pools {keys.RELEASE}"
    for command in ("operator", "agent"):
        assert f"usage: multigres-pools {command}" in _run_as_image(ctrd, pools, [command, "--help"])
    # The operator runs the reconcile playbook: Ansible finds the collection the wheel carries.
    listing = ctrd.run(pools.ref, ["ansible-galaxy", "collection", "list", "multigres.pools"], read_only=True,
                       tmpfs=("/tmp",))
    assert re.search(rf"multigres\.pools\s+{re.escape(keys.RELEASE)}", listing), listing


def test_project_image_holds_exactly_the_runtime_lock(ctrd: Containerd, built: dict[str, Built]) -> None:
    """The wheel and its pinned runtime closure: no development pin, nothing unpinned, no pip."""
    script = ("import importlib.metadata as m\n"
              "for d in m.distributions(): print(d.metadata['Name'], d.version, sep='==')")
    inside = {_normalise(n) + "==" + v for n, v in
              (line.split("==") for line in ctrd.run(built["pools"].ref, ["python3", "-c", script]).split())}
    lock = (REPO / catalog.POOLS_LOCK).read_text().split("\n")
    expected = {_normalise(n) + "==" + v for n, v in (line.split("==") for line in lock if "==" in line)}
    assert inside == expected | {f"multigres-pools=={keys.RELEASE}"}
    assert not {"pytest", "ruff", "mypy", "psycopg", "pip", "setuptools"} & {p.split("==")[0] for p in inside}


def test_multigres_image_starts_multipooler(ctrd: Containerd, built: dict[str, Built]) -> None:
    image = built["multigres"]
    config = image_config(Path(image.archive))
    assert config.working_dir == layout.MULTIGRES_BIN_DIR.rsplit("/", 1)[0]
    assert config.env["PATH"].startswith(layout.MULTIGRES_BIN_DIR + ":")
    assert sorted(ctrd.run(image.ref, ["ls", layout.MULTIGRES_BIN_DIR]).split()) == sorted(catalog.MULTIGRES_COMMANDS)
    _assert_pgbackrest(ctrd, image)
    # The pod's command path; no topology answers here, so it starts, logs its flags and keeps retrying.
    out = ctrd.run(image.ref, ["timeout", "3", f"{layout.MULTIGRES_BIN_DIR}/multipooler", "--cell=zone1",
                               "--database=db", "--table-group=default", "--shard=0-inf", "--service-id=test",
                               "--topo-global-server-addresses=127.0.0.1:2379", "--topo-global-root=/multigres/global",
                               "--pooler-dir=/tmp/pooler"], env={"POSTGRES_PASSWORD": "x"}, check=False)
    assert '"msg":"multipooler starting up"' in out and '"cell":"zone1"' in out, out


def test_pgctld_image_initialises_and_serves_postgresql_17(ctrd: Containerd, built: dict[str, Built]) -> None:
    image = built["pgctld"]
    config = image_config(Path(image.archive))
    assert config.entrypoint == ["tail"] and config.cmd == ["-f", "/dev/null"]
    assert "tail (GNU coreutils)" in _run_as_image(ctrd, image, ["--version"])
    assert ctrd.run(image.ref, ["sh", "-c", f"test -x {layout.PGCTLD_BIN} && echo ok"]).strip() == "ok"
    _assert_pgbackrest(ctrd, image)
    # pgctld's own initdb (the renderer's POSTGRES_PASSWORD_FILE route), then PostgreSQL 17 answers.
    script = ("set -e; echo secret > /tmp/pw; "
              "POSTGRES_PASSWORD_FILE=/tmp/pw PGDATA=/tmp/pooler/pg_data pgctld init --pooler-dir=/tmp/pooler; "
              "pg_ctl -D /tmp/pooler/pg_data -w -o \"-c listen_addresses= -k /tmp\" start >/dev/null; "
              "PGPASSWORD=secret psql -h /tmp -U postgres -At -c 'show server_version' "
              "-c \"select datctype from pg_database where datname = 'postgres'\"; "
              "pg_ctl -D /tmp/pooler/pg_data -w stop >/dev/null")
    lines = ctrd.run(image.ref, ["sh", "-c", script], timeout=180).strip().splitlines()
    assert lines[-2].startswith("17.") and lines[-1] in {"en_US.UTF-8", "en_US.utf8", "C.UTF-8"}, lines


def _assert_pgbackrest(ctrd: Containerd, image: Built) -> None:
    """Multigres v0.1.0 needs pgBackRest 2.57 or newer (docs/dependencies.md)."""
    version = ctrd.run(image.ref, ["pgbackrest", "version"]).strip()
    found = re.fullmatch(r"pgBackRest (\d+)\.(\d+)(\.\d+)?", version)
    assert found and (int(found[1]), int(found[2])) >= (2, 57), version


def test_ansible_operator_image_runs_the_collection(ctrd: Containerd, built: dict[str, Built]) -> None:
    image = built["ansible-operator"]
    config = image_config(Path(image.archive))
    assert config.entrypoint == ["/tini", "--", "/usr/local/bin/ansible-operator", "run",
                                 "--watches-file=./watches.yaml"]
    assert config.working_dir == "/opt/ansible"
    version = ctrd.run(image.ref, ["/tini", "--", "/usr/local/bin/ansible-operator", "version"])
    assert ansible_operator.VERSION in version, version
    core = ctrd.run(image.ref, ["ansible-playbook", "--version"])
    pin = (REPO / "requirements.txt").read_text().split("ansible-core==")[1].split()[0]
    assert f"core {pin}]" in core, core
    home = ctrd.run(image.ref, ["sh", "-c", "ls /opt/ansible; ansible-galaxy collection list multigres.pools"])
    assert {"watches.yaml", "playbooks"} <= set(home.split())
    assert re.search(rf"multigres\.pools\s+{re.escape(keys.RELEASE)}", home), home
    ctrd.run(image.ref, ["python3", "-c", "import ansible_runner_http, pydantic, cronsim"])


def test_execution_environment_runs_the_collection_offline(ctrd: Containerd, built: dict[str, Built]) -> None:
    """Through its entrypoint, as ansible-runner and ansible-navigator start it (it gives the
    arbitrary uid a HOME)."""
    image = built["execution-environment"]
    assert image.ref == keys.EXECUTION_ENVIRONMENT_IMAGE

    def run(argv: list[str], **kwargs: object) -> str:
        return ctrd.run(image.ref, argv, archive=Path(image.archive), entrypoint=True, **kwargs)  # type: ignore[arg-type]

    pin = (REPO / "requirements.txt").read_text().split("ansible-core==")[1].split()[0]
    assert f"core {pin}]" in run(["ansible-playbook", "--version"])
    listing = run(["ansible-galaxy", "collection", "list"])
    assert re.search(rf"multigres\.pools\s+{re.escape(keys.RELEASE)}", listing), listing
    assert re.search(r"kubernetes\.core\s+6\.", listing), listing
    # The render playbook, from the installed collection, with its own example: the objects appear.
    collection = "/usr/share/ansible/collections/ansible_collections/multigres/pools"
    out = run(["sh", "-c", "ansible-playbook multigres.pools.render "
               f"-e @{collection}/examples/sample-shard-vars.yml -e render_output_dir=/tmp/out "
               ">/tmp/log 2>&1 || { cat /tmp/log; exit 1; }; ls -R /tmp/out"], timeout=300)
    assert "kustomization.yaml" in out, out
    assert run(["sh", "-c", "test ! -e /etc/pip.conf && echo clean"]).strip() == "clean"
