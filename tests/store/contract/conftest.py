"""The backend the contract suite runs against: one parameter per backend.

``sqlite`` is the embedded file; ``postgres`` a database of its own on the shared PostgreSQL
server (made for the test, dropped after it: tests/pg.py). Each is opened the way
``switchboard.app.stores.open_stores`` opens it for a config naming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import pytest

from switchboard.app.stores import Stores, open_stores
from switchboard.config import StoreConfig
from tests.pg import fresh_database

BACKENDS: Final = ("sqlite", "postgres")


class Backend:
    """Opens the durable things of one backend, anew or again over what it kept."""

    def __init__(self, name: str, place: Path, url: str | None = None) -> None:
        self.name = name
        self._place = place
        self.url = url

    @asynccontextmanager
    async def open(self, *, fencing: bool = False) -> AsyncIterator[Stores]:
        """Everything durable, open; closed on the way out (open it again to see what was
        kept)."""
        if self.name == "sqlite":
            config = StoreConfig(path=str(self._place / "contract.sqlite"))
        elif self.name == "postgres":
            config = StoreConfig(backend="postgres", url=self.url)
        else:  # pragma: no cover - a backend named here must be opened here
            raise AssertionError(f"no way to open the {self.name!r} backend")
        async with open_stores(config, fencing=fencing) as stores:
            yield stores


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each backend in turn, over a place of its own."""
    name = str(request.param)
    if name == "postgres":
        with fresh_database("sbcontract") as url:
            yield Backend(name, tmp_path, url)
    else:
        yield Backend(name, tmp_path)
