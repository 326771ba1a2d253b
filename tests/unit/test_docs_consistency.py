"""The prose docs say only what the code defines: no placeholder left in them, no annotation or
label key that core/keys.py does not spell, no drain state that keys.DrainState does not have, and
no file of ours that is not there (a module moved or renamed leaves its old path in the prose)."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from tests.helpers.collection import REPO

DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]

PLACEHOLDER = re.compile(r"\b(?:\w*PLACEHOLDER|TODO|TBD)\b")
# A key under multigres.com (pools., drain. or bare) not itself inside a URL or a longer name. Names
# start and end alphanumeric, so `kubectl annotate ... key-` (removal) reads as `key`, while a
# wildcard (`drain.multigres.com/*`) or a Kind (`pools.multigres.com/MultigresShard`) is no key.
KEY = re.compile(r"(?<![\w./:-])((?:[a-z0-9-]+\.)*multigres\.com/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?![\w/])")
STATE_TOKEN = r"[a-z][a-z-]*"
# Where the docs name a drain state: a value of the state annotation (`state=x`, `state: x`), a
# backticked transition (`a → b`, `a -> b`), or "drain in/from/to `x`".
STATE_VALUE = re.compile(rf"{re.escape(keys.ANN_DRAIN_STATE)}(?:=|:\s+)({STATE_TOKEN})")
TRANSITION = re.compile(rf"`({STATE_TOKEN}(?:\s*(?:→|->)\s*{STATE_TOKEN})+)`")
DRAIN_IN = re.compile(rf"\bdrain (?:is |in |from |to |back to |state )`({STATE_TOKEN})`")


# A backticked file name: `kube/apply.py`, `status.py`, `gitops/flux/shards.yaml`.
FILE = re.compile(r"`([A-Za-z0-9_./-]+\.(?:py|yml|yaml|lua|sh|toml|json|cfg))`")
# Files named under a folder of ours must exist; other folders (upstream Multigres' `go/...`, a user's
# `shards/...`) are not ours to check.
SOURCE_ROOTS = ("plugins/module_utils/", "src/multigres_pools/")


@functools.cache
def our_files() -> tuple[frozenset[str], frozenset[str]]:
    """Every file of the checkout by its path from the root, as git sees it (tracked, or new and not
    ignored: a build/ copy of old sources must not make a stale name look present), and the folders
    a doc may start a path of ours with: the top-level ones and those right under a source root."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    paths = frozenset(listed)
    folders = {p.split("/", 1)[0] for p in paths if "/" in p}
    for root in SOURCE_ROOTS:
        folders.update(p[len(root):].split("/", 1)[0] for p in paths if p.startswith(root) and "/" in p[len(root):])
    return paths, frozenset(folders)


def missing_files(text: str) -> list[str]:
    """Backticked files of ours that no file's path ends with: a path under one of our folders, or a
    bare Python module name."""
    paths, folders = our_files()
    out = []
    for name in FILE.findall(text):
        ours = name.split("/", 1)[0] in folders if "/" in name else name.endswith(".py") and name[0] != "_"
        if ours and name not in paths and not any(p.endswith("/" + name) for p in paths):
            out.append(name)
    return out


def known_keys() -> set[str]:
    """Every string constant of core/keys.py: label and annotation keys, finalizers, the API group."""
    return {value for name, value in vars(keys).items() if name.isupper() and isinstance(value, str)}


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def unknown_keys(text: str, known: set[str]) -> list[str]:
    return [key for key in KEY.findall(text) if key not in known]


def unknown_drain_states(text: str) -> list[str]:
    states = {str(s) for s in keys.DrainState}
    named = STATE_VALUE.findall(text) + DRAIN_IN.findall(text)
    for chain in TRANSITION.findall(text):
        steps = re.split(r"\s*(?:→|->)\s*", chain)
        if states.intersection(steps):  # a chain of drain states, not of something else
            named += steps
    return [name for name in named if name not in states]


def problems(text: str) -> list[str]:
    return ([f"placeholder {p}" for p in placeholders(text)]
            + [f"key {k} not in core/keys.py" for k in unknown_keys(text, known_keys())]
            + [f"drain state {s} not in keys.DrainState" for s in unknown_drain_states(text)]
            + [f"file {f} not in the checkout" for f in missing_files(text)])


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_doc_names_only_what_the_code_defines(doc: Path) -> None:
    assert problems(doc.read_text()) == []


def test_the_checks_catch_what_they_are_for() -> None:
    text = ("Where the seconds go:\nPHASES_PLACEHOLDER\nTBD.\n"
            "`pools.multigres.com/no-such-key` and `multigres.com/rolez`; "
            "`drain.multigres.com/state=external-deletion`, `requested → external-deletion`, "
            "a drain in `stuck`; `plan.py` and `operator/watch.py` moved.")
    assert problems(text) == [
        "placeholder PHASES_PLACEHOLDER", "placeholder TBD",
        "key pools.multigres.com/no-such-key not in core/keys.py", "key multigres.com/rolez not in core/keys.py",
        "drain state external-deletion not in keys.DrainState", "drain state stuck not in keys.DrainState",
        "drain state external-deletion not in keys.DrainState",
        "file plan.py not in the checkout", "file operator/watch.py not in the checkout",
    ]


def test_what_is_not_a_key_or_a_state_passes() -> None:
    text = ("`pools.multigres.com/v1alpha1`, `pools.multigres.com/MultigresShard`, `drain.multigres.com/*`, "
            "`multigres.com/{cluster,pool}`, https://multigres.com/docs, "
            "`kubectl annotate mgs demo pools.multigres.com/paused-`, `3 -> 2`, `scale-up → scale-down`, "
            "`acknowledged -> draining`, drain in `requested`, TODOS and todo; `kube/apply.py`, `shard.py`, "
            "`src/multigres_pools/watch.py`, `go/services/multipooler/manager/rpc_backup.go`, `shards/play.yml`, "
            "`_pb2.py`, `image.json`.")
    assert problems(text) == []
