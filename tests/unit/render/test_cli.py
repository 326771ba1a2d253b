"""`multigres-pools render` / `install-bundle`: output, errors, determinism, and the stale-bundle check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools import cli
from multigres_pools.install import bundle
from tests import render_corpus as corpus

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "examples" / "sample-shard.yaml"


def _read_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _write_doc(path: Path, spec: dict, name: str = "demo") -> Path:
    path.write_text(yaml.safe_dump(corpus.document(name, "db", spec)))
    return path


def test_render_writes_crs_and_a_preview(tmp_path, capsys):
    assert cli.main(["render", "-f", str(SAMPLE), "-o", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    top = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert top["resources"] == ["multigresshard-demo.yaml"]
    cr = yaml.safe_load((out / "multigresshard-demo.yaml").read_text())
    assert cr["spec"]["pools"]["default"] == {"cells": ["zone1"], "replicasPerCell": 3, "storage": {"size": "10Gi"}}
    preview = yaml.safe_load((out / "preview" / "demo" / "kustomization.yaml").read_text())
    assert len(preview["resources"]) == 13  # NetworkPolicy, ConfigMap, 2 Services, PDB, Deployment, 4 PVCs, 3 Pods
    for name in preview["resources"]:
        assert (out / "preview" / "demo" / name).is_file()


def test_rerender_removes_stale_files(tmp_path):
    out = tmp_path / "out"
    big = _write_doc(tmp_path / "big.yaml", corpus.spec({"pools": {"default": {"replicasPerCell": 3}}}))
    assert cli.main(["render", "-f", str(big), "-o", str(out)]) == 0
    small = _write_doc(tmp_path / "small.yaml", corpus.spec({"pools": {"default": {"replicasPerCell": 2}}}))
    assert cli.main(["render", "-f", str(small), "-o", str(out)]) == 0
    pods = [p for p in (out / "preview" / "demo").iterdir() if p.name.startswith("pod-")]
    assert len(pods) == 2


def test_invalid_spec_exits_non_zero_names_path_and_rule_and_writes_nothing(tmp_path, capsys):
    bad = _write_doc(tmp_path / "bad.yaml", corpus.spec({"databaseName": "app", "pools": {"default": {"cells": []}}}))
    out = tmp_path / "out"
    assert cli.main(["render", "-f", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "spec.pools.default.cells" in err
    assert not out.exists()
    bad2 = _write_doc(tmp_path / "bad2.yaml", corpus.spec({"databaseName": "app"}))
    assert cli.main(["render", "-f", str(bad2), "-o", str(out)]) == 1
    assert "spec.databaseName: only database 'postgres' is supported (Multigres MVP) (rule: single-database)" in \
        capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("content", "message"), [
    ("a: [unclosed", "bad.yaml"),
    ("just a string", "not a MultigresShard document"),
    ("", "bad.yaml: no YAML document in it (empty, only comments, or null)"),
    ("# only a comment\n", "bad.yaml: no YAML document in it"),
    ("null\n", "bad.yaml: no YAML document in it"),
])
def test_unreadable_input_is_an_error(tmp_path, capsys, content, message):
    (tmp_path / "bad.yaml").write_text(content)
    assert cli.main(["render", "-f", str(tmp_path / "bad.yaml"), "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert cli.main(["render", "-f", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "out")]) == 2
    assert "missing.yaml: No such file or directory" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_previous_spec_enables_the_update_rules(tmp_path, capsys):
    live = _write_doc(tmp_path / "live.yaml", corpus.spec({"pools": {"default": {"storage": {"size": "10Gi"}}}}))
    new = _write_doc(tmp_path / "new.yaml", corpus.spec({"pools": {"default": {"storage": {"size": "5Gi"}}}}))
    assert cli.main(["render", "-f", str(new), "--previous", str(live), "--stdout"]) == 1
    assert "spec.pools.default.storage.size: storage size can only grow" in capsys.readouterr().err
    assert cli.main(["render", "-f", str(new), "--stdout"]) == 0


def test_vars_folder_to_stdout_prints_only_the_crs(tmp_path, capsys):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "a.yml").write_text(yaml.safe_dump({"multigres_shards": [
        {"metadata": {"name": "one", "namespace": "x"}, "spec": corpus.spec()},
        {"metadata": {"name": "two"}, "spec": corpus.spec()},
    ]}))
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped}\n")
    assert cli.main(["render", "-d", str(tmp_path), "--stdout", "-n", "fallback", "--allow-other-kinds"]) == 0
    captured = capsys.readouterr()
    docs = list(yaml.safe_load_all(captured.out))
    assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in docs] == [
        ("MultigresShard", "one", "x"), ("MultigresShard", "two", "fallback")]
    assert f"{tmp_path / 'other.yaml'}#0: skipped ConfigMap (--allow-other-kinds)" in captured.err


def test_other_kinds_are_an_error_unless_allowed(tmp_path, capsys):
    """A document dropped silently is a shard deleted by GitOps pruning when its `kind:` has a typo."""
    _write_doc(tmp_path / "shard.yaml", corpus.spec())
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    assert cli.main(["render", "-d", str(tmp_path), "--stdout"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{tmp_path / 'other.yaml'}#0: kind 'ConfigMap' is not a MultigresShard" in captured.err
    assert "--allow-other-kinds" in captured.err
    (tmp_path / "other.yaml").write_text(
        "apiVersion: pools.multigres.com/v1alpha1\nkind: MultigresShar\nmetadata: {name: typo}\n")
    for extra in ([], ["--allow-other-kinds"]):  # a kind of our API group is never skipped
        assert cli.main(["render", "-d", str(tmp_path), "--stdout", *extra]) == 2
        assert "kind 'MultigresShar' (apiVersion 'pools.multigres.com/v1alpha1') is not MultigresShard" in \
            capsys.readouterr().err


def _run(args: list[str], seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-m", "multigres_pools.cli", *args], check=True, env=env,
                   capture_output=True)


def test_output_is_byte_identical_across_hash_seeds(tmp_path):
    spec = corpus.spec({"pools": {"b": {"cells": ["z2", "z1"]}, "default": {"cells": ["z1"]}},
                        "postgresConfig": {"work_mem": "8MB", "max_connections": "100"},
                        "cellTopologyLabels": {"z1": {"a": "1", "b": "2"}, "z2": {"b": "2", "a": "1"}},
                        "multigateway": {"enabled": True}, "multiorch": {"recoveryCycleInterval": "500ms"}})
    src = _write_doc(tmp_path / "shard.yaml", spec)
    trees = []
    for seed in ("0", "4242"):
        _run(["render", "-f", str(src), "-o", str(tmp_path / seed)], seed)
        _run(["install-bundle", "-o", str(tmp_path / f"bundle-{seed}")], seed)
        trees.append((_read_tree(tmp_path / seed), _read_tree(tmp_path / f"bundle-{seed}")))
    assert trees[0] == trees[1]
    assert len(trees[0][0]) > 10


def test_manifests_folder_is_the_current_install_bundle():
    """Fails when the model, CRD or RBAC changed without `multigres-pools install-bundle -o manifests`."""
    expected = bundle.files()
    root = REPO / "manifests"
    actual = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*.yaml")}
    assert sorted(actual) == sorted(expected), "run: multigres-pools install-bundle -o manifests"
    stale = [name for name in expected if actual[name] != expected[name]]
    assert not stale, f"stale files {stale}; run: multigres-pools install-bundle -o manifests"


BUNDLES = {"namespaced": {}, "two-namespaces": {"namespaces": ("db", keys.INSTALL_NAMESPACE)},
           "cluster-wide": {"cluster_wide": True}}


@pytest.mark.parametrize("options", BUNDLES.values(), ids=BUNDLES.keys())
def test_rbac_justifies_every_rule_and_grants_no_wildcards(options):
    roles = 0
    for name, text in bundle.files(**options).items():
        if yaml.safe_load(text).get("kind") not in ("Role", "ClusterRole"):
            continue
        roles += 1
        lines = text.splitlines()
        rule_starts = [i for i, line in enumerate(lines) if line.startswith(("- apiGroups:", "- nonResourceURLs:"))]
        assert rule_starts
        for i in rule_starts:
            assert lines[i - 1].startswith("# "), f"{name}: rule at line {i + 1} has no justification"
        doc = yaml.safe_load(text)
        for rule in doc["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule.get("resources", []), (name, rule)
            assert rule.get("nonResourceURLs", ["/metrics"]) == ["/metrics"] and (
                "nonResourceURLs" not in rule or rule["verbs"] == ["get"]), (name, rule)
            # Generated pgBackRest TLS needs get/list/create/patch; the operator's cache watches Secret
            # metadata. Never delete or update Secrets: the garbage collector removes the generated ones.
            if "secrets" in rule.get("resources", []):
                assert rule["verbs"] == ["get", "list", "watch", "create", "patch"]
    # + metrics-auth, metrics-reader and the operator's read-only Nodes role
    assert roles == 7 if options.get("cluster_wide") else roles >= 7


def test_namespaced_by_default_one_role_and_binding_per_watched_namespace():
    files = {name: yaml.safe_load(text) for name, text in bundle.files(namespaces=("db", "db2")).items()}
    kinds = {(doc["kind"], doc["metadata"].get("namespace")) for doc in files.values() if "metadata" in doc}
    # Cluster-scoped only: the token and access review APIs and Nodes (no namespace exists for them)
    # and /metrics; Nodes read only.
    cluster_scoped = [doc for doc in files.values() if doc.get("kind") in ("ClusterRole", "ClusterRoleBinding")]
    assert sorted(doc["metadata"]["name"] for doc in cluster_scoped) == sorted(
        [keys.METRICS_AUTH_ROLE, keys.METRICS_AUTH_ROLE, keys.METRICS_READER_ROLE, keys.METRICS_SCRAPER,
         keys.OPERATOR_NODES_ROLE, keys.OPERATOR_NODES_ROLE])
    for doc in cluster_scoped:
        for rule in doc.get("rules", []):
            resource = rule.get("resources", ["tokenreviews"])[0]
            assert resource in ("tokenreviews", "subjectaccessreviews", "nodes"), rule
            assert rule["verbs"] == (["get", "list", "watch"] if resource == "nodes" else rule["verbs"]), rule
            assert rule["verbs"] in (["create"], ["get"], ["get", "list", "watch"]), rule
    for ns in ("db", "db2"):
        assert {("Role", ns), ("RoleBinding", ns)} <= kinds
    for component, extra in (("operator", []), ("agent", ["--owned-pods-only"])):
        args = files[f"{component}-deployment.yaml"]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[3:] == [*extra, "--namespace", "db", "--namespace", "db2"]
        assert "--metrics-auth=kubernetes" in args and any(a.endswith("=0.0.0.0:8080") for a in args)
    # The install namespace watched too: one Role there, holding the Lease grant as well.
    both = {name: yaml.safe_load(text) for name, text in
            bundle.files(namespaces=(keys.INSTALL_NAMESPACE,)).items()}
    roles = [doc for doc in both.values() if doc.get("kind") == "Role" and "operator" in doc["metadata"]["name"]]
    assert [r["metadata"]["namespace"] for r in roles] == [keys.INSTALL_NAMESPACE]
    assert any("leases" in rule["resources"] for rule in roles[0]["rules"])
    wide = {name: yaml.safe_load(text) for name, text in bundle.files(cluster_wide=True).items()}
    assert wide["operator-deployment.yaml"]["spec"]["template"]["spec"]["containers"][0]["args"][3:] == [
        "--all-namespaces"]
    with pytest.raises(ValueError, match="namespaces: give at least one"):
        bundle.files(namespaces=())


def test_install_md_holds_the_current_permission_table():
    """docs/install.md's table is written from the same grants as the RBAC (one source of truth)."""
    text = (REPO / "docs" / "install.md").read_text()
    assert bundle.permissions_table() in text, "paste bundle.permissions_table() into docs/install.md"
    rows = bundle.parse_permissions_table(text)
    assert rows == [(p.account, p.where, p.grant.groups, p.grant.resources, p.grant.verbs)
                    for p in bundle.permissions()]


def test_install_bundle_cli_scopes(tmp_path):
    assert cli.main(["install-bundle", "-o", str(tmp_path / "a"), "--watch-namespace", "db"]) == 0
    assert (tmp_path / "a" / "operator-role-db.yaml").exists()
    assert cli.main(["install-bundle", "-o", str(tmp_path / "b"), "--cluster-wide"]) == 0
    assert (tmp_path / "b" / "operator-clusterrole.yaml").exists()
    assert cli.main(["install-bundle", "-o", str(tmp_path / "c"), "--cluster-wide", "--watch-namespace", "db"]) == 2
    assert not (tmp_path / "c").exists()


def test_agent_and_operator_subcommands_delegate(monkeypatch):
    seen = {}

    class Fake:
        @staticmethod
        def main(argv):
            seen["argv"] = argv
            return 3

    monkeypatch.setitem(sys.modules, "multigres_pools.agent.__main__", Fake)
    assert cli.main(["agent", "--era", "a", "--namespace", "x"]) == 3
    assert seen["argv"] == ["--era", "a", "--namespace", "x"]


def test_playbook_writes_the_same_bytes_as_the_cli_and_check_mode_writes_nothing(tmp_path):
    vars_file = REPO / "examples" / "sample-shard-vars.yml"
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    playbook = [str(Path(sys.executable).parent / "ansible-playbook"), str(REPO / "playbooks" / "render.yml"),
                "-e", f"@{vars_file}"]
    checked = subprocess.run([*playbook, "-e", f"render_output_dir={tmp_path / 'check'}", "--check"],
                             cwd=REPO, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (tmp_path / "check").exists()
    ran = subprocess.run([*playbook, "-e", f"render_output_dir={tmp_path / 'ansible'}"],
                         cwd=REPO, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert cli.main(["render", "-f", str(vars_file), "-o", str(tmp_path / "cli")]) == 0
    assert _read_tree(tmp_path / "ansible") == _read_tree(tmp_path / "cli")
    bad = tmp_path / "bad.yml"
    shard = {"metadata": {"name": "x"}, "spec": corpus.spec({"shardName": "1"})}
    bad.write_text(yaml.safe_dump({"multigres_shard": shard}))
    failed = subprocess.run([*playbook[:2], "-e", f"@{bad}", "-e", f"render_output_dir={tmp_path / 'bad'}"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "spec.shardName" in failed.stdout
    assert not (tmp_path / "bad").exists()


def test_an_empty_folder_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli.main(["render", "-d", str(tmp_path / "empty"), "-o", str(tmp_path / "out")]) == 2
    assert f"{tmp_path / 'empty'}: no .yaml or .yml file in it" in capsys.readouterr().err


@pytest.mark.parametrize(("change", "message"), [
    ({"replicasPerCell": True}, "spec.pools.default.replicasPerCell: Input should be a valid integer"),
    ({"replicasPerCell": "3"}, "spec.pools.default.replicasPerCell: Input should be a valid integer"),
    ({"storage": {"size": "1GB"}}, "spec.pools.default.storage.size: '1GB' is not a Kubernetes quantity: a number "
                                   "with a binary suffix (Ki, Mi, Gi, Ti) or a decimal one (k, M, G, T), e.g. 10Gi"),
])
def test_values_the_api_server_refuses_are_refused_in_words(tmp_path, capsys, change, message):
    """As strict as the API server (a boolean is no integer), and a quantity error without a regex."""
    doc = corpus.spec({"pools": {"default": {"cells": ["zone1"], **change}}})
    path = _write_doc(tmp_path / "shard.yaml", doc)
    assert cli.main(["render", "-f", str(path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err and "^(" not in err, err
