"""What the cluster tests share: an ownership that records what it was told."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

#: Figures the tests measured, printed in pytest's terminal summary (tests/cluster/conftest.py).
FIGURES: list[str] = []


def figure(line: str) -> None:
    """Keep a measured figure for the summary (pytest captures what tests print)."""
    FIGURES.append(line)


@dataclass
class Changes:
    """Wakes whoever waits each time any recorder it is shared by changes."""

    _event: anyio.Event = field(default_factory=anyio.Event)

    def changed(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def until(self, condition: Callable[[], bool], within: float = 15.0) -> None:
        with anyio.fail_after(within):
            while not condition():
                await self._event.wait()


@dataclass
class RecordingOwnership:
    """Records each start and stop of a key."""

    changes: Changes = field(default_factory=Changes)
    serving: dict[str, int] = field(default_factory=dict)
    history: list[tuple[str, str, int | bool]] = field(default_factory=list)

    async def acquired(self, key: str, epoch: int) -> None:
        self.serving[key] = epoch
        self.history.append(("acquired", key, epoch))
        self.changes.changed()

    async def lost(self, key: str, *, graceful: bool) -> None:
        self.serving.pop(key, None)
        self.history.append(("lost", key, graceful))
        self.changes.changed()
