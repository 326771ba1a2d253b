from pathlib import Path

import pytest

from multigres_pools.operator import cpu


@pytest.mark.parametrize(("text", "cores"), [
    ("max 100000\n", None),
    ("200000 100000\n", 2.0),
    ("50000 100000", 0.5),
    ("150000 100000", 1.5),
    ("100000", 1.0),  # the period is optional and defaults to 100ms
])
def test_parse_cpu_max(text: str, cores: float | None) -> None:
    assert cpu.parse_cpu_max(text) == cores


@pytest.mark.parametrize("text", ["", "0 100000", "-5 100000", "abc 100000"])
def test_parse_cpu_max_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        cpu.parse_cpu_max(text)


def test_parse_cfs() -> None:
    assert cpu.parse_cfs("-1\n", "100000\n") is None
    assert cpu.parse_cfs("250000\n", "100000\n") == 2.5
    with pytest.raises(ValueError):
        cpu.parse_cfs("0", "100000")


@pytest.mark.parametrize(("cores", "runs"), [
    (None, cpu.UNLIMITED_DEFAULT),
    (0.1, 1),   # a tenth of a core still gets one worker
    (0.5, 1),
    (1.0, 2),
    (1.5, 3),
    (2.0, 4),
    (64.0, cpu.MAX_CONCURRENCY),  # a huge limit is capped, never 128 playbooks at once
])
def test_concurrency_for(cores: float | None, runs: int) -> None:
    assert cpu.concurrency_for(cores) == runs


def test_reads_cgroup_v2_before_v1(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("400000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu.cpu_limit(tmp_path) == 4.0
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cpu.cpu_limit(tmp_path) == 1.5
    assert cpu.default_concurrency(tmp_path) == 3


def test_no_cgroup_files_means_unlimited(tmp_path: Path) -> None:
    assert cpu.cpu_limit(tmp_path) is None
    assert cpu.default_concurrency(tmp_path) == cpu.UNLIMITED_DEFAULT


@pytest.mark.parametrize(("text", "limit"), [
    ("max\n", None),
    ("536870912\n", 512 * cpu.MIB),
    ("9223372036854771712\n", None),  # cgroup v1's "no limit"
])
def test_parse_memory_max(text: str, limit: int | None) -> None:
    assert cpu.parse_memory_max(text) == limit


@pytest.mark.parametrize(("cores", "memory", "runs"), [
    (2.0, None, 4),
    (None, 512 * cpu.MIB, 3),   # no CPU limit (4) but 512 MiB: (512 - 128) / 128 = 3
    (8.0, 512 * cpu.MIB, 3),    # the memory limit caps a generous CPU limit
    (1.0, 4096 * cpu.MIB, 2),   # plenty of memory: the CPU limit decides
    (4.0, 200 * cpu.MIB, 1),    # never below one
])
def test_memory_limit_caps_concurrency(cores: float | None, memory: int | None, runs: int) -> None:
    assert cpu.concurrency_for(cores, memory) == runs


def test_reads_memory_limit_from_cgroup(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(str(640 * cpu.MIB))
    assert cpu.memory_limit(tmp_path) == 640 * cpu.MIB
    (tmp_path / "memory.max").write_text("max\n")
    assert cpu.memory_limit(tmp_path) is None
    (tmp_path / "cpu.max").write_text("400000 100000\n")
    (tmp_path / "memory.max").write_text(str(512 * cpu.MIB))
    assert cpu.default_concurrency(tmp_path) == 3
