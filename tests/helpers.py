"""Test helpers shared by the host, tools and integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.host import Switchboard


@dataclass
class Seen:
    kind: str
    server_id: str
    detail: Mapping[str, Any]


@dataclass
class Recorder:
    """An observer that remembers host events and lets a test wait for one."""

    events: list[Seen] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, kind: str, server_id: str, detail: Mapping[str, Any]) -> None:
        self.events.append(Seen(kind, server_id, detail))
        self._changed.set()
        self._changed = anyio.Event()

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e.kind == kind)

    async def wait_for(
        self, predicate: Callable[[Seen], bool], *, after: int = 0, within: float = 20.0
    ) -> Seen:
        """The first event at index >= ``after`` that satisfies ``predicate``."""
        with anyio.fail_after(within):
            while True:
                for e in self.events[after:]:
                    if predicate(e):
                        return e
                await self._changed.wait()

    async def wait_kind(self, kind: str, *, nth: int = 1, within: float = 20.0) -> Seen:
        """Wait until ``nth`` events of ``kind`` have been seen; returns the nth."""
        with anyio.fail_after(within):
            while True:
                matching = [e for e in self.events if e.kind == kind]
                if len(matching) >= nth:
                    return matching[nth - 1]
                await self._changed.wait()


def connector(cid: str, command: list[str], **kw: Any) -> ConnectorConfig:
    kw.setdefault("backoff_initial", 0.05)
    kw.setdefault("backoff_max", 0.2)
    return ConnectorConfig(id=cid, command=command, **kw)


@asynccontextmanager
async def running_board(
    tmp_path: Path, *connectors: ConnectorConfig, recorder: Recorder | None = None
) -> AsyncIterator[Switchboard]:
    config = Config(
        connectors=list(connectors), store=StoreConfig(path=str(tmp_path / "sb.sqlite"))
    )
    async with Switchboard.started(config, observer=recorder or Recorder()) as board:
        yield board
