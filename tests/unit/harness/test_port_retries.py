"""The retry loop of playground/ports.py, without servers (the servers: tests/integration/harness/test_ports.py)."""

from __future__ import annotations

import pytest

from multigres_pools.playground import ports


def test_a_conflict_starts_again_and_the_last_answer_wins() -> None:
    attempts: list[int] = []

    def start(n: int) -> str:
        attempts.append(n)
        if n < 2:
            raise ports.PortConflict("etcd: address already in use")
        return "up"

    assert ports.start_with_retries(start, "etcd") == "up" and attempts == [0, 1, 2]


def test_conflicts_without_end_give_up_with_the_reason() -> None:
    def start(n: int) -> None:
        raise ports.PortConflict(f"etcd: address already in use (try {n})")

    with pytest.raises(RuntimeError, match=r"every one of 3 attempts hit a taken port: .*try 2"):
        ports.start_with_retries(start, "etcd", attempts=3)


def test_other_failures_are_not_retried() -> None:
    attempts: list[int] = []

    def start(n: int) -> None:
        attempts.append(n)
        raise RuntimeError("bad flag")

    with pytest.raises(RuntimeError, match="bad flag"):
        ports.start_with_retries(start, "etcd")
    assert attempts == [0]


def test_free_ports_are_distinct() -> None:
    assert len(set(ports.free_ports(20))) == 20
