"""Knowing when an answer is on the wire: a link wrapper that watches outgoing responses.

Why: a connector becomes *ready* when its receipt for the host's policy Request has been sent
(spec §5.3); if it registered channels the moment its handler returned, the register frame
could overtake the receipt and a conforming host would reject it. :class:`ReplyWatch` fires a
callback once a response carrying an expected result is written; :class:`ReplyHooks` runs what
a hook asked for after its answer.

What it deliberately does not know: MCPL, the peer's internals, or request ids.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from switchboard.transport import Link

__all__ = ["AfterReply", "ReplyHooks", "ReplyWatch"]

AfterReply = Callable[[], Awaitable[None]]
"""Work a hook asks to run once its answer is on the wire (:meth:`Connector.after_reply`)."""

log = structlog.get_logger(__name__)


class ReplyWatch:
    """A :class:`~switchboard.transport.Link` that reports when expected answers are sent.

    Why it exists: a connector becomes *ready* when its receipt for the host's policy Request has
    been sent (spec §5.3), and the host marks the connection ready when that receipt arrives. If the
    connector sent ``channels/register`` the moment its handler returned, the register frame could
    overtake the receipt frame and a conforming host would reject it (mcpl-protocol.md 1.3, the
    ordering trap). So "ready" is tied to the receipt being *written*, not to the handler returning.
    The same mechanism lets a connector act after any answer is out (a reply message that must
    follow the publish result, a crash test that exits only after answering).

    Theory of operation: :meth:`ReplyWatch.expect` registers the result object of a request being
    answered and a callback. While anything is expected, every frame sent through the link is
    parsed; the first response whose ``result`` equals an expected one fires that callback, after
    the underlying send returned. When nothing is expected, a send costs one attribute check. Only
    handlers of this SDK register results and they never defer their answers, so two equal results
    are answered in registration order.
    """

    __slots__ = ("_expected", "_link")

    def __init__(self, link: Link) -> None:
        self._link = link
        self._expected: list[tuple[Any, Callable[[], None]]] = []

    @property
    def description(self) -> str:
        """The wrapped link's description."""
        return self._link.description

    @property
    def inner(self) -> Link:
        """The wrapped link."""
        return self._link

    def expect(self, result: Any, on_sent: Callable[[], None]) -> None:
        """Call ``on_sent`` once a response carrying ``result`` has been written."""
        self._expected.append((result, on_sent))

    def forget(self) -> None:
        """Drop every pending expectation (the connection is ending)."""
        self._expected.clear()

    async def send(self, frame: bytes) -> None:
        """Send one frame, then fire the callbacks of the answers it carried."""
        await self._link.send(frame)
        if self._expected:
            self._observe(frame)

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Send several frames (in one write when the link supports it), then observe them."""
        send_many = getattr(self._link, "send_many", None)
        if send_many is not None:
            await send_many(frames)
        else:
            for frame in frames:
                await self._link.send(frame)
        if self._expected:
            for frame in frames:
                self._observe(frame)

    async def receive(self) -> bytes:
        """Receive from the wrapped link."""
        return await self._link.receive()

    async def aclose(self) -> None:
        """Close the wrapped link and drop expectations."""
        self._expected.clear()
        await self._link.aclose()

    def _observe(self, frame: bytes) -> None:
        try:
            message = json.loads(frame)
        except ValueError:
            return  # not JSON (a junk line a connector wrote on purpose)
        for item in message if isinstance(message, list) else (message,):
            if isinstance(item, dict) and "result" in item and "method" not in item:
                self._match(item["result"])

    def _match(self, result: Any) -> None:
        for index, (expected, on_sent) in enumerate(self._expected):
            if expected == result:
                del self._expected[index]
                try:
                    on_sent()
                except Exception:
                    log.exception("reply_callback_failed")
                return


class ReplyHooks:
    """The work hooks ask to follow one answer, for one served connection.

    The inbound handlers :meth:`begin` before a hook runs and :meth:`end` after it; what the
    hook registered meanwhile (:attr:`current`) is started, through ``start``, once the answer
    is on the wire (:meth:`after`), or at once after a Notification, which has no answer.
    """

    __slots__ = ("_start", "_watch", "current")

    def __init__(self, watch: ReplyWatch, start: Callable[[AfterReply], None]) -> None:
        self._watch = watch
        self._start = start
        #: The work registered by the hook running now; None outside a hook.
        self.current: list[AfterReply] | None = None

    def begin(self) -> list[AfterReply]:
        """A hook starts: what it registers is collected in the list returned."""
        callbacks: list[AfterReply] = []
        self.current = callbacks
        return callbacks

    def end(self) -> None:
        """The hook returned (or raised)."""
        self.current = None

    def after(self, result: Any, callbacks: list[AfterReply]) -> None:
        """Start ``callbacks`` once the answer carrying ``result`` is written (None: now)."""

        def start() -> None:
            for fn in callbacks:
                self._start(fn)

        if result is None:
            start()
        else:
            self._watch.expect(result, start)

    def expect(self, answer: Any, on_sent: Callable[[], None]) -> None:
        """Call ``on_sent`` once the answer carrying ``answer`` is written."""
        self._watch.expect(answer, on_sent)
