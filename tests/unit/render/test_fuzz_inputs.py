"""Zero tracebacks for any input: the CLI (`render`, which the ArgoCD plugin runs) and the
`shard_render` / `shard_reconcile` modules, over the seed corpus in tests/fuzz_corpus/ and over
inputs a fuzzer derives from it.

Each corpus file starts with `# expect: exit=N stderr=TEXT`: the CLI's exit code (0 done, 1 invalid
MultigresShard, 2 unusable input) and a piece of its error. The fuzzer mutates the seeds (bytes of
the text, or values and shapes of the parsed documents) and asserts what holds for every input: no
exception escapes, the exit code is 0, 1 or 2, every error names its source (the file, `shards[i]`),
and a failed run writes nothing.

`make test` runs FUZZ_EXAMPLES examples per fuzz test (default 150, the same ones every run);
`make fuzz` runs FUZZ_EXAMPLES=5000 (override it) with fresh randomness (FUZZ_RANDOM=1).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.multigres.pools.plugins.module_utils.spec import inputs, model
from ansible_collections.multigres.pools.plugins.modules import shard_reconcile, shard_render
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multigres_pools import cli
from multigres_pools.install import crd

CORPUS = Path(__file__).resolve().parents[2] / "fuzz_corpus"
SEEDS = sorted(CORPUS.glob("*.yaml"))
_EXPECT = re.compile(rb"^# expect: exit=(\d)(?: stderr=(.*))?\n")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=not os.environ.get("FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def expectation(path: Path) -> tuple[int, str]:
    match = _EXPECT.match(path.read_bytes())
    assert match, f"{path.name}: the first line must be '# expect: exit=N [stderr=TEXT]'"
    return int(match.group(1)), (match.group(2) or b"").decode()


# --- running the entry points in-process ------------------------------------------------------------
def run_cli(content: bytes, mode: str = "output") -> tuple[int, str]:
    """`multigres-pools render` on one file; checks what holds for any input, returns (exit, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "input.yaml", Path(tmp) / "out"
        src.write_bytes(content)
        args = ["render", "-f", str(src), *(["--stdout"] if mode == "stdout" else ["-o", str(out)])]
        if mode == "previous":
            args += ["--previous", str(src)]
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli.main(args)
        err = stderr.getvalue()
        assert code in (0, 1, 2), (code, err)
        if code:
            assert str(src) in err, f"the error does not name its source: {err}"
            assert all(str(src) in line for line in err.splitlines() if line.startswith("  - ")), err
            assert not out.exists() and stdout.getvalue() == "", "a failed run wrote something"
        return code, err


# An error line starts with the field it is about: the module argument for shard_render, the path in
# the document (or the argument) for shard_reconcile, as the CRD names it.
RENDER_FIELD = re.compile(r"(shards\[\d+\]|previous|namespace)")
RECONCILE_FIELD = re.compile(r"(\[[^\]]*\]|[^\s:\[])(\[[^\]]*\]|[^:\[])*: ")  # odd keys come quoted: ['a:b']


def run_module(main: Callable[[], None], args: dict[str, Any], field: re.Pattern[str]) -> dict[str, Any]:
    stdout = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(stdout), pytest.raises(SystemExit):
        main()
    result = json.loads(stdout.getvalue())
    if result.get("failed"):
        assert result.get("msg"), result
        for error in result.get("errors") or []:
            assert field.match(error), f"the error does not name its field: {error}"
    return result


def render_module(shards: Any, previous: Any = None, **extra: Any) -> dict[str, Any]:
    args = {"shards": shards, **({"previous": previous} if previous else {}), **extra}
    return run_module(shard_render.main, args, RENDER_FIELD)


def reconcile_module(tmp: Path, **args: Any) -> dict[str, Any]:
    """Vars mode against a kubeconfig that does not exist: it must fail on the input before connecting."""
    return run_module(shard_reconcile.main, {"kubeconfig": str(tmp / "no-kubeconfig"), **args}, RECONCILE_FIELD)


def shard_entries(doc: Any) -> list[Any]:
    """What a corpus document gives the module: the shards a vars file lists, or the document."""
    if isinstance(doc, dict) and ("multigres_shard" in doc or "multigres_shards" in doc):
        listed = doc.get("multigres_shards") or []
        return ([doc["multigres_shard"]] if "multigres_shard" in doc else []) + (listed if isinstance(listed, list)
                                                                                else [listed])
    return [doc]


# --- the seed corpus ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.stem)
def test_corpus_through_the_cli(seed):
    want_code, want_text = expectation(seed)
    code, err = run_cli(seed.read_bytes())
    assert code == want_code, err
    assert want_text in err


def _loadable(seed: Path) -> list[Any] | None:
    """The documents of a seed that Ansible could hand to a module (YAML accepted, JSON types only)."""
    try:
        docs = [doc for _, doc in inputs.load_yaml(seed.read_bytes(), seed.name)]
        json.dumps(docs)
    except (inputs.InputError, TypeError):
        return None
    return docs


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.stem)
def test_corpus_through_the_render_module(seed):
    docs = _loadable(seed)
    if docs is None:
        pytest.skip("refused as YAML or not JSON: Ansible never hands such data to a module")
    want_code, want_text = expectation(seed)
    result = render_module([entry for doc in docs for entry in shard_entries(doc)])
    if want_code == 0:
        assert not result.get("failed"), result["msg"]
    elif want_code == 1:
        assert result["failed"] and want_text in result["msg"]


def test_corpus_size():
    assert len(SEEDS) >= 40
    assert {expectation(s)[0] for s in SEEDS} == {0, 1, 2}


# --- the fuzzer ---------------------------------------------------------------------------------
def _field_names() -> list[str]:
    """Every property name of the CRD schema: mutations that add keys mostly add real ones."""
    names: set[str] = set()
    stack = [crd.shard_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            names.update(node.get("properties", {}))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(names)


FIELDS = _field_names()
STRUCTURED = [docs for docs in map(_loadable, SEEDS) if docs]
LEAVES = st.one_of(
    st.sampled_from([
        None, True, False, 0, -1, 1, 3, 32, 33, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 0.5, -0.0, 1e308,
        math.inf, -math.inf, math.nan, "", "1e1000000", "1e1.5", "8Ei", "10Gi", "-1Gi", "0", "zone1", "default",
        "v0.1.0", "d782aa06", "MultigresShard", "pools.multigres.com/v1alpha1", "List", "UPPER_case", "a" * 300,
        "../../etc/passwd", "\x00", "é", "{{ lookup('env', 'HOME') }}", "yes", "500ms", "0s", "1h", "filesystem",
        "s3", "auto", "certManager", "AT_LEAST_2", "ConfigMap", "readWrite",
    ]),
    st.integers(), st.floats(), st.text(max_size=24), st.sampled_from(FIELDS),
)
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8),
                                                                        inner, max_size=4),
    max_leaves=12)


def _paths(doc: Any) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack and len(out) < 400:
        value, path = stack.pop()
        out.append(path)
        if isinstance(value, dict):
            stack += [(v, (*path, k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, (*path, i)) for i, v in enumerate(value)]
    return out


def _mutate(data: st.DataObject, docs: list[Any]) -> list[Any]:
    docs = copy.deepcopy(docs)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        index = data.draw(st.integers(0, len(docs) - 1), label="document")
        path = data.draw(st.sampled_from(_paths(docs[index])), label="path")
        op = data.draw(st.sampled_from(["replace", "replace", "delete", "add", "wrap", "copy-document"]), label="op")
        if op == "copy-document":
            docs.append(copy.deepcopy(docs[index]))
            continue
        if not path:
            docs[index] = data.draw(VALUES, label="document value") if op != "wrap" else [docs[index]]
            continue
        parent = docs[index]
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if op == "replace":
            parent[last] = data.draw(VALUES, label="value")
        elif op == "delete":
            del parent[last]
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif isinstance(parent[last], dict):
            parent[last][data.draw(st.sampled_from(FIELDS), label="key")] = data.draw(VALUES, label="value")
        elif isinstance(parent[last], list):
            parent[last].append(data.draw(VALUES, label="item"))
        else:
            parent[last] = data.draw(VALUES, label="value")
    return docs


def _dump(docs: list[Any]) -> bytes:
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False).encode()


@st.composite
def byte_mutations(draw: st.DrawFn) -> bytes:
    content = bytearray(draw(st.sampled_from(SEEDS), label="seed").read_bytes())
    for _ in range(draw(st.integers(1, 6), label="edits")):
        at = draw(st.integers(0, len(content)), label="at")
        op = draw(st.sampled_from(["insert", "delete", "replace"]), label="op")
        chunk = draw(st.sampled_from([b"-", b":", b"[", b"]", b"{", b"}", b"&a", b"*a", b"!!", b"|", b">", b"'",
                                      b'"', b"#", b"\n", b"\t", b" ", b",", b"?", b"<<: ", b"\xff", b"0", b"e9"])
                     | st.binary(min_size=1, max_size=4), label="chunk")
        if op == "insert":
            content[at:at] = chunk
        elif op == "delete":
            del content[at:at + len(chunk)]
        else:
            content[at:at + len(chunk)] = chunk
    return bytes(content)


@FUZZ
@given(content=byte_mutations(), mode=st.sampled_from(["output", "stdout", "previous"]))
def test_fuzz_cli_bytes(content, mode):
    run_cli(content, mode)


@FUZZ
@given(data=st.data(), mode=st.sampled_from(["output", "stdout", "previous"]))
def test_fuzz_cli_documents(data, mode):
    docs = _mutate(data, data.draw(st.sampled_from(STRUCTURED), label="seed"))
    run_cli(_dump(docs), mode)


@FUZZ
@given(data=st.data())
def test_fuzz_render_module(data):
    docs = _mutate(data, data.draw(st.sampled_from(STRUCTURED), label="seed"))
    shards = [entry for doc in docs for entry in shard_entries(doc)]
    previous = None
    if shards and isinstance(shards[0], dict) and data.draw(st.booleans(), label="with previous"):
        previous = {"demo": data.draw(st.sampled_from([shards[0].get("spec"), 5, [], None]) | VALUES,
                                      label="previous spec")}
    render_module(shards, previous)


@FUZZ
@given(data=st.data())
def test_fuzz_reconcile_module_arguments(data, tmp_path_factory):
    docs = _mutate(data, data.draw(st.sampled_from(STRUCTURED), label="seed"))
    entry = data.draw(st.sampled_from([e for d in docs for e in shard_entries(d)] or [{}]), label="entry")
    args: dict[str, Any] = ({"shard": entry} if data.draw(st.booleans(), label="as document")
                            else {"spec": entry.get("spec") if isinstance(entry, dict) else entry,
                                  "namespace": data.draw(st.sampled_from(["db", "Bad_NS", "", "x" * 70]))})
    if data.draw(st.booleans(), label="timeout"):
        args["cleanup_timeout"] = data.draw(st.floats() | st.integers(-5, 5), label="cleanup_timeout")
    result = reconcile_module(tmp_path_factory.getbasetemp(), **args)
    assert result.get("failed")  # never connected: the kubeconfig does not exist


# --- known cases, each directly ---------------------------------------------------------------------
BASE = {"metadata": {"name": "demo", "namespace": "db"},
        "spec": {"clusterName": "demo", "globalTopoServer": {"address": "etcd:2379"},
                 "pools": {"main": {"cells": ["z1"], "storage": {"size": "10Gi"}}}}}


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    node[last] = value
    return doc


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("shards", "previous", "message"), [
    ([_with("metadata", [])], None, "shards[0] metadata: Input should be a valid dictionary"),
    ([_with("spec", 5)], None, "shards[0] spec: Input should be a valid dictionary"),
    ([_with("metadata.name", ["x"])], None, "shards[0] metadata.name: Input should be a valid string"),
    ([_with("spec.pools.main.storage.size", "1e1000000")], None, "out of range"),
    ([_with("spec.pools.main.replicasPerCell", 2**70)], None, "shards[0]: spec.pools.main.replicasPerCell: "
                                                              "integer out of range"),
    ([_with("spec.pools.main.replicasPerCell", math.nan)], None, "number out of range"),
    ([_with("spec.pools.main.affinity", {"a": _deep(100)})], None, "nested more than 64 levels deep"),
    ([BASE], {"demo": 5}, "previous.demo: Input should be a valid dictionary"),
    ([BASE], {"demo": {"pools": 5}}, "previous.demo.pools: Input should be a valid dictionary"),
    ([BASE, BASE], None, "shards[0] and shards[1]: MultigresShard 'demo' is defined 2 times"),
    ([[1, 2]], None, "shards"),  # Ansible's own argument check
])
def test_render_module_known_cases(shards, previous, message):
    result = render_module(shards, previous)
    assert result["failed"] and message in result["msg"], result["msg"]


def test_render_module_bad_namespace_and_output_dir(tmp_path):
    assert "namespace 'Bad NS'" in render_module([BASE], namespace="Bad NS")["msg"]
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = render_module([BASE], output_dir=str(blocker))
    assert result["failed"] and result["msg"].startswith("output_dir: ")


@pytest.mark.parametrize(("args", "message"), [
    ({"spec": BASE["spec"], "namespace": "Bad_NS"}, "namespace: 'Bad_NS': String should match pattern"),
    ({"name": "../../secrets/x", "namespace": "db"}, "name: '../../secrets/x': String should match pattern"),
    ({"shard": BASE, "cleanup_timeout": math.nan}, "cleanup_timeout: nan: must be a finite number"),
    ({"shard": BASE, "cleanup_timeout": -1}, "cleanup_timeout: -1.0: must be a finite number"),
    ({"shard": _with("metadata", [])}, "metadata: Input should be a valid dictionary"),
    ({"shard": _with("spec", 5)}, "spec: Input should be a valid dictionary"),
    ({"spec": {"pools": 5}, "namespace": "db"}, "spec.pools: Input should be a valid dictionary"),
    ({"shard": _with("spec.pools.main.storage.size", "1e1000000")}, "out of range"),
    ({"shard": _with("spec.pools.main.replicasPerCell", 2**64)}, "integer out of range"),
])
def test_reconcile_module_refuses_bad_arguments_before_connecting(tmp_path, args, message):
    result = reconcile_module(tmp_path, **args)
    assert result["failed"] and message in result["msg"], result["msg"]
    assert "kubeconfig" not in result["msg"]


@pytest.mark.parametrize("kubeconfig", ["just text\n", "clusters: 5\ncurrent-context: a\n",
                                        "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
                                        "clusters: [{name: c, cluster: {}}]\n"])
def test_reconcile_module_malformed_kubeconfig(tmp_path, kubeconfig):
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig)
    result = run_module(shard_reconcile.main, {"shard": BASE, "kubeconfig": str(path)}, RECONCILE_FIELD)
    assert result["failed"] and "kubeconfig" in result["msg"], result["msg"]


def test_cli_previous_reads_kubectl_lists_and_refuses_other_documents(tmp_path, capsys):
    live = copy.deepcopy(BASE)
    live["spec"]["pools"]["main"]["storage"]["size"] = "20Gi"
    kubectl = {"apiVersion": "v1", "kind": "List",
               "items": [{"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard", **live}]}
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(kubectl))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard", **BASE}))
    args = ["render", "-f", str(tmp_path / "new.yaml"), "--stdout", "--previous", str(tmp_path / "live.yaml")]
    assert cli.main(args) == 1  # 20Gi -> 10Gi: the update rules ran against the List's item
    assert "storage-grow-only" in capsys.readouterr().err
    (tmp_path / "live.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert cli.main(args) == 2
    assert f"{tmp_path / 'live.yaml'}#0: --previous takes MultigresShards" in capsys.readouterr().err
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard", **_with("spec", 5)}))
    assert cli.main(args) == 1
    assert f"{tmp_path / 'live.yaml'}#0: spec: Input should be a valid dictionary" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["install-bundle", "-o", "{out}", "--image", ""], "--image '': String should have at least 1 character"),
    (["install-bundle", "-o", "{out}", "--image", "a b"], "--image 'a b': String should match pattern"),
    (["install-bundle", "-o", "{blocker}/sub"], "Not a directory"),
    (["install-bundle", "-o", "{out}", "--watch-namespace", "Bad_NS"], "--watch-namespace 'Bad_NS': String should"),
    (["render", "-f", "{blocker}", "--stdout", "-n", "Bad_NS"], "--namespace 'Bad_NS'"),
    (["render", "-d", "{blocker}", "--stdout"], "not a directory"),
])
def test_cli_usage_errors_exit_2(tmp_path, capsys, args, message):
    blocker = tmp_path / "blocker.yaml"
    blocker.write_text("")
    argv = [a.format(out=tmp_path / "out", blocker=blocker) for a in args]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_limits_are_what_the_docs_say():
    assert (inputs.MAX_DOCUMENT_BYTES, inputs.MAX_DEPTH, inputs.MAX_NODES, inputs.MAX_INTEGER) == \
        (1024 * 1024, 64, 100_000, 2**63 - 1)
    docs = (Path(__file__).resolve().parents[3] / "docs" / "render.md").read_text()
    assert model.MAX_AFFINITY_VALUES == 500
    for text in ("1 MiB", "64 levels", "100,000", "2^63-1", "500 values"):
        assert text in docs
