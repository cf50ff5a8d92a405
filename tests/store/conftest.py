"""Fixtures for the store tests: a database path in tmp_path and a store opened on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from switchboard.store.sqlite import MessageStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[MessageStore]:
    opened = await MessageStore.open(db_path)
    try:
        yield opened
    finally:
        await opened.aclose()
