"""`status -o json`: the screen's content as plain, typed JSON under the keys docs/cli.md documents."""

from __future__ import annotations

import json
import re
from typing import Any

from multigres_pools.report import as_json, verdict
from tests.helpers.collection import REPO

from . import fixtures as f
from .fixtures import name


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def test_every_fixture_is_plain_json_with_the_screen_s_judgement() -> None:
    for build in (f.healthy, f.draining, f.no_primary, f.unreachable):
        report = build()
        body = as_json.document(report)
        assert _plain(body) and json.loads(as_json.render(report)) == body
        assert "Durability(" not in as_json.render(report) and "datetime" not in as_json.render(report)
        judged = verdict.judge(report)
        assert (body["state"], body["reasons"], body["headline"]) == (judged.state, judged.reasons,
                                                                      judged.headline(report))
        assert body["attention"] == verdict.attention(report)


def test_values_are_typed() -> None:
    body = as_json.document(f.draining())
    pods = {p["name"]: p for p in body["pods"]}
    assert pods[name(2)]["sync"] == "async" and pods[name(2)]["lag_bytes"] == 256
    assert pods[name(2)]["drain"] == {"state": "draining", "reason": "scale-down", "blocked": None}
    assert pods[name(0)]["sync"] == "primary" and pods[name(0)]["state"] is None
    assert pods[name(0)]["age_seconds"] == 3 * 3600 and pods[name(0)]["created_at"] == "2026-11-24T01:00:00Z"
    assert body["replication"]["durability"] == {"required": 2, "multi_cell": False, "met": True,
                                                 "text": "at least 2 poolers, the primary included"}
    assert body["replication"]["synchronous"] == [{"pooler": "zone1_p-61e88a1e", "pod": name(1)}]
    assert body["backups"]["first_recoverable"] == {"backup_id": "20261117-010002F", "lsn": "0/3000100"}
    assert body["backups"]["next_scheduled"] == {"type": "differential", "at": "2026-11-25T01:00:00Z"}
    assert body["conditions"] == []  # Ready/Available only count the draining pod
    down = as_json.document(f.unreachable())
    assert down["data_plane"]["reached"] is False and "10.244.0.11:15270" in down["data_plane"]["error"]
    assert [p["sync"] for p in down["pods"]] == [None, None, None]


def test_docs_cli_md_names_every_key() -> None:
    """The table under "status -o json" in docs/cli.md lists each key, nested ones too."""
    text = (REPO / "docs" / "cli.md").read_text()
    table = text[text.index("### `status -o json`"):]
    documented = set(re.findall(r"`([a-z_]+)`", table))
    body = as_json.document(f.no_primary())
    body["backups"]["running"] = body["backups"]["last"]

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        return {k for v in value for k in keys(v)} if isinstance(value, list) else set()

    drained = as_json.document(f.draining())
    assert (keys(body) | keys(drained)) - documented == set()
