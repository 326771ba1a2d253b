from pathlib import Path

from multigres_pools.operator import artifacts


def _runs(pdd: Path, n: int) -> list[str]:
    idents = [artifacts.new_ident() for _ in range(n)]
    for ident in idents:
        (pdd / "artifacts" / ident / "job_events").mkdir(parents=True)
    return idents


def test_idents_sort_in_start_order() -> None:
    idents = [artifacts.new_ident() for _ in range(100)]
    assert idents == sorted(idents)


def test_prune_runs_keeps_the_newest(tmp_path: Path) -> None:
    pdd = artifacts.shard_dir(tmp_path, "ns", "a")
    idents = _runs(pdd, 5)
    removed = artifacts.prune_runs(pdd, keep=2)
    assert sorted(p.name for p in removed) == idents[:3]
    assert sorted(p.name for p in (pdd / "artifacts").iterdir()) == idents[3:]
    assert artifacts.prune_runs(pdd, keep=2) == []
    assert artifacts.prune_runs(tmp_path / "missing", keep=2) == []


def test_prune_shards_removes_dirs_of_deleted_shards(tmp_path: Path) -> None:
    for ns, name in [("ns1", "a"), ("ns1", "b"), ("ns2", "c")]:
        _runs(artifacts.shard_dir(tmp_path, ns, name), 1)
    (tmp_path / ".ansible" / "tmp").mkdir(parents=True)  # Ansible's scratch space is not a shard
    removed = artifacts.prune_shards(tmp_path, [("ns1", "a")])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in removed) == ["ns1/b", "ns2/c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ansible", "ns1"]  # the empty ns2 dir went too
    assert artifacts.shard_dir(tmp_path, "ns1", "a").is_dir()
