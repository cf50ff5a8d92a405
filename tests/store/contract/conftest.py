"""The backend the contract suite runs against: one parameter per backend.

A second backend (issue: cluster mode on PostgreSQL) is a second name in :data:`BACKENDS` and a
branch in :class:`Backend.open` (which opens what ``switchboard.app.stores.open_stores`` opens
for a config naming it); every test of this folder then runs against both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import pytest

from switchboard.app.stores import Stores, open_stores
from switchboard.config import StoreConfig

BACKENDS: Final = ("sqlite",)


class Backend:
    """Opens the durable things of one backend, anew or again over what it kept."""

    def __init__(self, name: str, place: Path) -> None:
        self.name = name
        self._place = place

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Stores]:
        """Everything durable, open; closed on the way out (open it again to see what was
        kept)."""
        if self.name == "sqlite":
            config = StoreConfig(path=str(self._place / "contract.sqlite"))
        else:  # pragma: no cover - a backend named here must be opened here
            raise AssertionError(f"no way to open the {self.name!r} backend")
        async with open_stores(config) as stores:
            yield stores


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend in turn, over a place of its own."""
    return Backend(str(request.param), tmp_path)
