"""What a peer's handlers are: the two handler signatures and :class:`Deferred`.

A request handler returns the result (or raises to answer with an error); a notification
handler returns nothing. A request handler may instead return ``Deferred(work)``: the peer
then goes on with the next inbound message at once and answers this request when ``work``
ends. That keeps state changes in arrival order while a slow wait (a durability flush, a
lifecycle round trip) overlaps the next requests.

The id of the request a handler is answering is :func:`handled_request_id` while the handler
runs (an answer that follows notifications naming its request, such as streamed chunks).

This module knows handler shapes only; the peer decides when they run.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "HANDLED_REQUEST_ID",
    "Deferred",
    "FutureLike",
    "NotificationHandler",
    "RequestHandler",
    "handled_request_id",
]

HANDLED_REQUEST_ID: ContextVar[str | int | None] = ContextVar("handled_request_id", default=None)
"""The JSON-RPC id of the inbound request whose handler runs now (set by the peer)."""


def handled_request_id() -> str | int | None:
    """The id of the inbound request being handled, as it came (string or number); ``None``
    outside a request handler. Read it before the handler's first ``await`` hands work on."""
    return HANDLED_REQUEST_ID.get()


RequestHandler = Callable[[str, Any], Awaitable[Any]]
"""``(method, params) -> result``; raise ``RpcError`` (or any ``WireError``) to refuse."""

NotificationHandler = Callable[[str, Any], Awaitable[None]]
"""``(method, params) -> None``; exceptions are logged, never answered."""


@runtime_checkable
class FutureLike(Protocol):
    """The part of ``asyncio.Future`` :meth:`Deferred.on_future` relies on."""

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None: ...

    def done(self) -> bool: ...

    def result(self) -> Any: ...


class Deferred:
    """A handler's promise to answer later, letting the dispatcher move on now.

    Args:
        work: an awaitable, or a zero-argument function returning one; its value becomes
            the result, its exception the error object.

    :meth:`on_future` is the cheap form for work that is already a future (for example a
    store commit): the answer is written from the future's done-callback, with no task.
    """

    __slots__ = ("_after", "_failed", "_then", "_work", "future")

    def __init__(self, work: Awaitable[Any] | Callable[[], Awaitable[Any]]) -> None:
        self._work = work
        self.future: FutureLike | None = None
        self._then: Callable[[Any], Any] | None = None
        self._failed: Callable[[Exception], Exception] | None = None
        self._after: Callable[[Any], None] | None = None

    @classmethod
    def on_future(
        cls,
        future: FutureLike,
        then: Callable[[Any], Any],
        *,
        failed: Callable[[Exception], Exception] | None = None,
        after: Callable[[Any], None] | None = None,
    ) -> Deferred:
        """Answer with ``then(future.result())`` once ``future`` is done.

        ``then`` runs in the event loop's callback; it must not block. If the future failed,
        or ``then`` raises, the exception becomes the error object; ``failed``, if given, first
        turns the future's exception into the one answered with (no second future needed).
        ``after``, if given, gets the same value once the answer has been handed to the link
        (work the answer need not wait for); what it raises is logged, never answered.
        """
        deferred = cls(_never)
        deferred.future = future
        deferred._then = then
        deferred._failed = failed
        deferred._after = after
        return deferred

    def settle(self, future: FutureLike) -> Any:
        """The result for a finished :attr:`future` (raises what the work raised)."""
        assert self._then is not None
        failed = self._failed
        if failed is None:
            return self._then(future.result())
        try:
            value = future.result()
        except Exception as exc:
            raise failed(exc) from None
        return self._then(value)

    def run_after(self, future: FutureLike) -> None:
        """Run ``after`` (see :meth:`on_future`) with the value of a future that succeeded."""
        after = self._after
        if after is not None:
            after(future.result())

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


async def _never() -> Any:  # the placeholder work of a future-backed Deferred; never awaited
    raise RuntimeError("a future-backed Deferred has no coroutine")
