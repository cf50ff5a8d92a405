"""What a peer's handlers are: the two handler signatures and :class:`Deferred`.

A request handler returns the result (or raises to answer with an error); a notification
handler returns nothing. A request handler may instead return ``Deferred(work)``: the peer
then goes on with the next inbound message at once and answers this request when ``work``
ends. That keeps state changes in arrival order while a slow wait (a durability flush, a
lifecycle round trip) overlaps the next requests.

This module knows handler shapes only; the peer decides when they run.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Deferred", "NotificationHandler", "RequestHandler"]

RequestHandler = Callable[[str, Any], Awaitable[Any]]
"""``(method, params) -> result``; raise ``RpcError`` (or any ``WireError``) to refuse."""

NotificationHandler = Callable[[str, Any], Awaitable[None]]
"""``(method, params) -> None``; exceptions are logged, never answered."""


class Deferred:
    """A handler's promise to answer later, letting the dispatcher move on now.

    Args:
        work: an awaitable, or a zero-argument function returning one; its value becomes
            the result, its exception the error object.
    """

    __slots__ = ("_work",)

    def __init__(self, work: Awaitable[Any] | Callable[[], Awaitable[Any]]) -> None:
        self._work = work

    def __repr__(self) -> str:
        return f"Deferred({self._work!r})"

    async def wait(self) -> Any:
        """Run (or await) the work and return its value."""
        work = self._work
        if inspect.isawaitable(work):
            return await work
        return await work()

    def discard(self) -> None:
        """Close the work's coroutine if it never started (avoids "never awaited")."""
        work = self._work
        if inspect.iscoroutine(work) and inspect.getcoroutinestate(work) == "CORO_CREATED":
            work.close()
