"""`harness up --env-file` writes what `source` and `harness down` both read back intact."""

from __future__ import annotations

import subprocess
from pathlib import Path

from multigres_pools.playground.cluster import read_env_file, write_env_file

ENV = {"KUBECONFIG": "/tmp/mgp cluster/kubeconfig", "HARNESS_PIDS": "101 102 103", "TOPO_ETCD": "http://127.0.0.1:2379"}


def test_env_file_round_trips_through_bash_source_and_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "harness.env"
    write_env_file(path, ENV)
    shell = subprocess.run(["bash", "-c", f'source "{path}" && printf "%s|%s|%s" '
                                          '"$KUBECONFIG" "$HARNESS_PIDS" "$TOPO_ETCD"'],
                           capture_output=True, text=True, check=True)
    assert shell.stdout == "|".join(ENV.values())
    assert shell.stderr == ""
    assert read_env_file(path) == ENV
