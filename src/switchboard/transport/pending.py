"""Our outstanding requests: ids, waiters, matching responses, timeouts, failing on close.

:class:`PendingRequests` hands out request ids (integers from 1, never reused), keeps one
waiter per request, resolves a waiter from a response by the exact id value, and enforces
timeouts with a single timer task (:meth:`PendingRequests.watch_deadlines`) that cancels the
waiting caller's scope, so a request times out even while its frame is stuck in a write.

A waiter is a bare asyncio future of the running loop rather than an ``anyio.Event``: the
peer runs on anyio's asyncio backend only (like ``stdio_server``), and the event cost a
backend lookup to make and a checkpoint to wait, on every request (confirmed
publishes).

This module knows the outbound half of JSON-RPC matching; it does not send frames (the
caller passes a ``send`` function) and does not read them (the peer's reader calls
:meth:`PendingRequests.resolve`).
"""

from __future__ import annotations

import asyncio
import enum
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, TypeVar

import anyio

from switchboard.transport.deadlines import DeadlineQueue
from switchboard.transport.errors import LinkClosedError, RequestTimeoutError, RpcError
from switchboard.transport.messages import InboundResponse

__all__ = ["USE_DEFAULT", "PendingRequests", "Timeout", "new_event"]


class _Default(enum.Enum):
    USE_DEFAULT = enum.auto()


USE_DEFAULT: Final = _Default.USE_DEFAULT
"""Sentinel for ``Peer.request(timeout=...)``: use the peer's ``default_timeout``."""

Timeout = float | Literal[_Default.USE_DEFAULT] | None
"""Seconds, ``None`` for no timeout, or ``USE_DEFAULT``."""


_T = TypeVar("_T")


def _backend_made(make: Callable[[], _T]) -> Callable[[], _T]:
    """A maker of what ``make`` makes, calling the class of its first result directly.

    ``anyio.CancelScope()`` and ``anyio.Event()`` look the backend up on every call (a quarter
    of what a scope costs, about a microsecond an event, several times per request on the hot
    paths); the class they return is remembered and called directly, which makes the same
    object. The peer runs on asyncio only (see the module docstring), so the class is the same
    on every later call.
    """
    remembered: list[Callable[[], _T]] = []

    def new() -> _T:
        if remembered:
            return remembered[0]()
        made = make()
        remembered.append(type(made))
        return made

    return new


_new_scope: Final = _backend_made(anyio.CancelScope)
"""A bare cancel scope of the running backend (see :func:`_backend_made`)."""

new_event: Final = _backend_made(anyio.Event)
"""A fresh event of the running backend (see :func:`_backend_made`)."""


class _Waiter:
    __slots__ = ("done", "error", "method", "on_response", "result", "scope", "timed_out")

    def __init__(
        self,
        method: str,
        done: asyncio.Future[None],
        on_response: Callable[[Any], None] | None = None,
    ) -> None:
        self.method = method
        self.on_response = on_response
        self.done = done
        self.result: Any = None
        self.error: Exception | None = None
        self.scope: anyio.CancelScope | None = None
        self.timed_out = False


class PendingRequests:
    """The requests a peer sent and still waits for.

    Args:
        description: the link's description, for error messages.
        read_error: builds the exception for an error response (see ``Peer``).
    """

    def __init__(
        self,
        description: str,
        read_error: Callable[[Mapping[str, Any]], RpcError] = RpcError.from_wire,
    ) -> None:
        self._description = description
        self._read_error = read_error
        self._next_id = 1
        self._waiters: dict[int, _Waiter] = {}
        self._deadlines = DeadlineQueue()
        self._timer_wake = anyio.Event()

    def __len__(self) -> int:
        return len(self._waiters)

    async def call(
        self,
        method: str,
        encode: Callable[[int], bytes],
        send: Callable[[bytes], Awaitable[None]],
        timeout: float | None,  # noqa: ASYNC109 - enforced by the timer task, see the class
        on_response: Callable[[Any], None] | None = None,
        send_now: Callable[[bytes], bool] | None = None,
    ) -> Any:
        """Allocate an id, send ``encode(id)`` with ``send``, and wait for the response.

        ``on_response``, if given, is called with a successful result synchronously in the
        reader, before any message read after the response is dispatched.

        Raises:
            RpcError: the response carried an error object.
            RequestTimeoutError: no response within ``timeout`` seconds.
            LinkClosedError: the link closed first (see :meth:`fail_all`).
        """
        request_id = self._next_id
        self._next_id = request_id + 1
        frame = encode(request_id)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(method, loop.create_future(), on_response)
        self._waiters[request_id] = waiter
        try:
            if timeout is None:
                await send(frame)
                await waiter.done
            else:
                if self._deadlines.add(request_id, loop.time() + timeout):
                    self._timer_wake.set()
                if send_now is not None and send_now(frame):
                    # Taken at once (it leaves with this turn's write, Outbox.try_send_own):
                    # only the answer is awaited, and on expiry the timer wakes this waiter
                    # itself; a cancel scope would cost a third of a short request.
                    await waiter.done
                else:
                    # The timer task cancels this scope on expiry: a bare scope costs far less
                    # than a scope with a deadline of its own (which schedules a loop timer).
                    waiter.scope = scope = _new_scope()
                    with scope:
                        await send(frame)
                        await waiter.done
                if waiter.timed_out:
                    raise RequestTimeoutError(
                        f"no response to {method!r} (id {request_id}) from "
                        f"{self._description} within {timeout} s"
                    )
        finally:
            self._waiters.pop(request_id, None)
            self._deadlines.discard(request_id)
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    def in_wire_order(self, response: InboundResponse) -> bool:
        """Whether ``response`` answers a waiting request that asked for ``on_response``.

        Such a response changes state that inbound messages are judged by, so the peer resolves
        it in arrival order with them rather than at once.
        """
        request_id = response.id
        if type(request_id) is not int or response.error is not None:
            return False
        waiter = self._waiters.get(request_id)
        return waiter is not None and waiter.on_response is not None

    def resolve(self, response: InboundResponse) -> bool:
        """Hand a response to its waiter; False if no request waits for that exact id."""
        request_id = response.id
        # type() and not ==: True == 1 and 1.0 == 1, but neither is our id 1.
        if type(request_id) is not int:
            return False
        waiter = self._waiters.pop(request_id, None)
        if waiter is None:
            return False
        if response.error is None:
            waiter.result = response.result
            if waiter.on_response is not None:
                try:
                    waiter.on_response(response.result)
                except Exception as exc:  # the caller sees it, not the reader
                    waiter.error = exc
        else:
            waiter.error = self._read_error(response.error)
        _wake(waiter)
        return True

    def fail_all(self) -> None:
        """Fail every waiting request with ``LinkClosedError``."""
        for request_id, waiter in self._waiters.items():
            waiter.error = LinkClosedError(
                f"link {self._description} closed before the response to {waiter.method!r} "
                f"(id {request_id}) arrived; the request may or may not have been processed"
            )
            _wake(waiter)
        self._waiters.clear()

    async def watch_deadlines(self) -> None:
        """Time out requests as their deadlines pass; runs until cancelled."""
        while True:
            for request_id in self._deadlines.expire(anyio.current_time()):
                waiter = self._waiters.pop(request_id, None)
                if waiter is not None:
                    waiter.timed_out = True
                    if waiter.scope is not None:
                        waiter.scope.cancel()
                    else:  # its frame was taken at once: it only waits for this future
                        _wake(waiter)
            wake = new_event()
            self._timer_wake = wake
            deadline = self._deadlines.next_deadline()
            with anyio.CancelScope(deadline=math.inf if deadline is None else deadline):
                await wake.wait()


def _wake(waiter: _Waiter) -> None:
    """Let the caller waiting on ``waiter`` go on (its future may be cancelled already)."""
    if not waiter.done.done():
        waiter.done.set_result(None)
