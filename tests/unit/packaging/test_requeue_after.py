"""multigres.pools.requeue_after through ansible-playbook: by its short name (what the Ansible
Operator matches) it returns its period; a period Go could not parse fails the task, naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers.collection import REPO


def _run(tmp_path: Path, periods: list[str]) -> list[dict]:
    """One ansible-playbook run (its start-up is most of the cost) with a task per period."""
    tasks: list[dict] = []
    for i, period in enumerate(periods):
        tasks += [{"name": f"Requeue {i}", "requeue_after": {"period": period}, "register": f"out{i}",
                   "ignore_errors": True},
                  {"name": f"Save {i}", "ansible.builtin.copy": {"content": f"{{{{ out{i} | to_json }}}}",
                                                                 "dest": str(tmp_path / f"out{i}.json"),
                                                                 "mode": "0644"}}]
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "collections": ["multigres.pools"],
             "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "play.yml")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(len(periods))]


def test_returns_the_period_and_refuses_what_go_cannot_parse(tmp_path):
    ok, bad = _run(tmp_path, ["1.5s", "soon"])
    assert ok["period"] == "1.5s" and not ok.get("failed") and not ok["changed"]
    assert bad["failed"] and "period: 'soon' is not a Go duration" in bad["msg"]
