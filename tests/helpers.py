"""Test helpers shared by the host, tools and integration tests.

``SWITCHBOARD_TEST_BACKEND=postgres`` runs the boards these helpers start on PostgreSQL (a
database of their own on the shared server, dropped afterwards) instead of an SQLite file:
the behaviour suites that make sense on one instance run on both (docs/cluster.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio

from switchboard.app.board import Switchboard
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.events import HostEvent
from switchboard.store import DecisionLogProtocol, MessageStoreProtocol
from switchboard.store.sqlite import DecisionLog, MessageStore

E = TypeVar("E", bound=HostEvent)


@dataclass
class Recorder:
    """A host event listener that remembers events and lets a test wait for one."""

    events: list[HostEvent] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, event: HostEvent) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    def of(self, kind: type[E]) -> list[E]:
        """The events of type ``kind`` seen so far, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def count(self, kind: type[HostEvent]) -> int:
        return len(self.of(kind))

    async def wait_for(
        self, predicate: Callable[[HostEvent], bool], *, after: int = 0, within: float = 20.0
    ) -> HostEvent:
        """The first event at index >= ``after`` that satisfies ``predicate``."""
        with anyio.fail_after(within):
            while True:
                for e in self.events[after:]:
                    if predicate(e):
                        return e
                await self._changed.wait()

    async def wait_kind(self, kind: type[E], *, nth: int = 1, within: float = 20.0) -> E:
        """Wait until ``nth`` events of type ``kind`` have been seen; returns the nth."""
        with anyio.fail_after(within):
            while True:
                matching = self.of(kind)
                if len(matching) >= nth:
                    return matching[nth - 1]
                await self._changed.wait()


def connector(cid: str, command: list[str], **kw: Any) -> ConnectorConfig:
    kw.setdefault("backoff_initial", 0.05)
    kw.setdefault("backoff_max", 0.2)
    return ConnectorConfig(id=cid, command=command, **kw)


def suite_backend() -> str:
    """The backend boards in tests run on: ``sqlite`` unless ``SWITCHBOARD_TEST_BACKEND``
    says ``postgres``."""
    name = os.environ.get("SWITCHBOARD_TEST_BACKEND", "sqlite")
    if name not in ("sqlite", "postgres"):
        raise ValueError(f"SWITCHBOARD_TEST_BACKEND is sqlite or postgres, not {name!r}")
    return name


def suite_store_config(tmp_path: Path, name: str = "store.sqlite") -> StoreConfig:
    """The ``[store]`` of a test's board: the SQLite file ``tmp_path / name``, or (with
    ``SWITCHBOARD_TEST_BACKEND=postgres``) a fresh database, dropped when the test ends
    (tests/conftest.py)."""
    if suite_backend() == "postgres":
        from tests.pg import database_for_test

        return StoreConfig(backend="postgres", url=database_for_test("sbsuite"))
    return StoreConfig(path=str(tmp_path / name))


@asynccontextmanager
async def running_board(
    tmp_path: Path,
    *connectors: ConnectorConfig,
    recorder: Recorder | None = None,
    store: StoreConfig | None = None,
) -> AsyncIterator[Switchboard]:
    """A started board with ``connectors`` over ``store``; by default the suite's store of
    ``tmp_path`` (:func:`suite_store_config`; the same one again for a restart)."""
    if store is None:
        store = _PLACES.get(tmp_path) or suite_store_config(tmp_path, "sb.sqlite")
        _PLACES[tmp_path] = store
    config = Config(connectors=list(connectors), store=store)
    async with Switchboard.started(config, listener=recorder or Recorder()) as board:
        yield board


#: The store of each test folder a board was started over (a restart opens it again).
_PLACES: dict[Path, StoreConfig] = {}


def store_at(path: Path) -> StoreConfig:
    """The suite's store named by the file ``path``: that SQLite file, or (on PostgreSQL) one
    database per path, the same one again when a test reopens the path (a restart)."""
    if suite_backend() != "postgres":
        return StoreConfig(path=str(path))
    found = _PLACES.get(path)
    if found is None:
        found = _PLACES[path] = suite_store_config(path.parent)
    return found


async def open_message_store(config: StoreConfig) -> MessageStoreProtocol:
    """The message store of ``config`` alone (its caller closes it)."""
    if config.backend == "postgres":
        from switchboard.cluster.pg.message_store import PgMessageStore

        assert config.url is not None
        return await PgMessageStore.open(config.url)
    return await MessageStore.open(config.path)


async def open_decision_log(config: StoreConfig) -> DecisionLogProtocol:
    """The decision log of ``config`` alone (its caller closes it)."""
    if config.backend == "postgres":
        from switchboard.cluster.pg.decisions import PgDecisionLog
        from switchboard.cluster.pg.schema import connect, migrate

        url = config.url
        assert url is not None

        def migrated() -> None:
            with connect(url) as conn:
                migrate(conn)

        await anyio.to_thread.run_sync(migrated)
        return await PgDecisionLog.open(url)
    return await DecisionLog.open(config.path)


@asynccontextmanager
async def serving(config: Config) -> AsyncIterator[str]:
    """``serve(config)`` running (the agents' HTTP endpoint); yields the URL it listens on."""
    from switchboard.app.serve import serve

    urls: list[str] = []
    listening = anyio.Event()

    def heard(url: str) -> None:
        urls.append(url)
        listening.set()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: serve(config, on_listening=heard))
        with anyio.fail_after(30):
            await listening.wait()
        try:
            yield urls[0]
        finally:
            group.cancel_scope.cancel()


def run_check(
    path: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``switchboard check --config path`` as a user runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "switchboard", "check", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
    )
