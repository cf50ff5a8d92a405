"""Fixtures for the directory tests: a fake clock and a directory over a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from switchboard.directory import Directory


class FakeClock:
    """A clock the test moves by hand (no sleeps)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def directory(tmp_path: Path, clock: FakeClock) -> Iterator[Directory]:
    with Directory.open(tmp_path / "store.sqlite", clock=clock) as d:
        yield d
