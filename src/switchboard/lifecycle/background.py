"""Where host background work runs: one task group for the host, one per served link.

What this module knows: :class:`BackgroundWork`. Work started from a synchronous place (a host
event listener, which must not block) needs a task group to run in. ``Switchboard.run()``
runs :meth:`BackgroundWork.run` beside the supervisors, giving one host-wide group; a link served
outside supervision (``Switchboard.serve_link``) wraps its session in
:meth:`BackgroundWork.serving`, giving that connection a group of its own that ends with it.
:meth:`BackgroundWork.spawn` prefers the connection's group, then the host's; with neither, the
work is dropped and logged. A failure of spawned work is logged and never ends its group.

What it deliberately does not know: what the work is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import structlog
from anyio.abc import TaskGroup

__all__ = ["BackgroundWork"]

log = structlog.get_logger(__name__)


class BackgroundWork:
    """Task groups for work started by host events (see the module docstring)."""

    __slots__ = ("_group", "_name", "_server_groups")

    def __init__(self, name: str) -> None:
        self._name = name
        self._group: TaskGroup | None = None
        self._server_groups: dict[str, TaskGroup] = {}

    @property
    def running(self) -> bool:
        """Whether the host-wide group is up."""
        return self._group is not None

    async def run(self) -> None:
        """Hold the host-wide group until cancelled."""
        async with anyio.create_task_group() as tg:
            self._group = tg
            try:
                await anyio.sleep_forever()
            finally:
                self._group = None

    @asynccontextmanager
    async def serving(self, server_id: str) -> AsyncIterator[None]:
        """Hold a group for one connection served outside :meth:`run`; it ends with the body."""
        async with anyio.create_task_group() as tg:
            self._server_groups[server_id] = tg
            try:
                yield
            finally:
                if self._server_groups.get(server_id) is tg:
                    del self._server_groups[server_id]
                tg.cancel_scope.cancel()

    def spawn(self, server_id: str, fn: Callable[..., Awaitable[None]], *args: object) -> bool:
        """Start ``fn(*args)`` for ``server_id``; False when no group is up to run it."""
        group = self._server_groups.get(server_id) or self._group
        if group is None:
            log.warning("background_work_dropped", owner=self._name, server_id=server_id)
            return False
        group.start_soon(self._guarded, fn, *args)
        return True

    async def _guarded(self, fn: Callable[..., Awaitable[None]], *args: object) -> None:
        try:
            await fn(*args)
        except Exception:
            log.exception(
                "background_work_failed", owner=self._name, work=getattr(fn, "__name__", repr(fn))
            )
