"""A JSON-RPC 2.0 peer over one :class:`~switchboard.transport.link.Link`.

Both ends of a link are peers: each may send requests and notifications and answer the other's.
:meth:`Peer.run` runs a reader (which resolves responses at once, so none waits behind a slow
handler), a dispatcher (handlers in arrival order; a ``Deferred`` releases it), a writer and a
timer. Every inbound request is answered exactly once; every outbound request ends with a
result or an error.

It does not know what any method means (handlers do) nor how frames are delimited (links do).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

import anyio
import structlog
from anyio.abc import TaskGroup

from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.transport.errors import (
    INTERNAL_ERROR,
    FrameTooLargeError,
    LinkClosedError,
    RpcError,
    internal_error,
    invalid_request,
    method_not_found,
    wire_error,
)
from switchboard.transport.handlers import (
    HANDLED_REQUEST_ID,
    Deferred,
    NotificationHandler,
    RequestHandler,
)
from switchboard.transport.link import Link
from switchboard.transport.messages import (
    ImmediateReply,
    InboundCall,
    InboundNotification,
    InboundResponse,
    ParamsReaders,
    decode_frame,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
)
from switchboard.transport.outbox import Outbox
from switchboard.transport.pending import USE_DEFAULT, PendingRequests, Timeout, new_event

__all__ = ["Peer", "PeerStatistics"]

# How long a shutting-down peer keeps trying to write its last answers.
_SHUTDOWN_FLUSH_GRACE = 1.0
# After EOF, how long the handlers of requests already received may take to answer them.
_EOF_DRAIN_GRACE = 5.0
# The answer to a request still unanswered when the peer shuts down: ``data.reason`` tells a
# remote it was not handled and may be sent again (the host's other "not taken" answers,
# such as a rate limit, say why the same way).
_SHUTTING_DOWN: Final = RpcError(
    INTERNAL_ERROR,
    "Peer is shutting down: this request was not handled; send it again later",
    {"reason": "shutting-down"},
).to_wire()
_INTERNAL: Final = internal_error().to_wire()


class PeerStatistics(NamedTuple):
    """A snapshot of a peer's counters and queue depths."""

    requests_sent: int
    requests_received: int
    notifications_sent: int
    notifications_received: int
    awaiting_response: int
    unanswered: int
    inbox: int
    outbox: int


def _check_params(method: str, params: Any) -> None:
    if params is not None and not isinstance(params, dict | list | tuple):
        raise TypeError(f"params of {method!r} must be a dict, a list or None")


class Peer:
    """One end of a JSON-RPC 2.0 conversation over ``link``.

    Both ends of a link are peers: each may send requests and notifications and answer the other's.
    The peer knows ids, matching, ordering, timeouts and error objects; it does not know what any
    method means (handlers do) nor how frames are delimited (links do).

    Theory of operation. :meth:`Peer.run` runs four tasks in one task group:

    - the **reader** takes frames from the link, classifies them (``messages.decode_frame``) and
      resolves responses to our own requests *at once*, so a response is never stuck behind a slow
      handler; requests and notifications go to the inbox in arrival order. The one exception: a
      response whose request asked for ``on_response`` goes through the inbox when messages read
      before it wait there, so the state it changes (a session's readiness) changes in wire order;
    - the **dispatcher** takes the inbox one message at a time and awaits its handler, so handlers
      see messages in the order they arrived. A handler that returns ``Deferred`` releases the
      dispatcher immediately; its response is sent when the deferred work ends;
    - the **writer** sends what the outbox holds (see ``outbox`` for how writes are batched);
    - the **timer** times out our own requests (see ``pending``).

    At EOF the peer stops accepting requests of its own (no response could arrive) but still handles
    and answers what it received, then shuts down: it answers anything left with an error, flushes,
    closes the link and cancels its tasks.

    Invariants: every inbound request is answered exactly once (``InboundCall.answered``), also when
    its handler or deferred work raises and, best effort, when the peer shuts down; every outbound
    request ends with a result, an ``RpcError``, a ``RequestTimeoutError`` or a ``LinkClosedError``;
    nothing on the success path logs or scans.

    Args:
        link: the link to talk over; the peer closes it when it stops.
        on_request: answers inbound requests; ``None`` answers every one ``-32601``.
        on_notification: receives inbound notifications; ``None`` drops them.
        name: bound to every log line as ``peer``.
        default_timeout: seconds an outbound request waits by default (``None``: forever).
        read_error: turns an error object the remote answered with into the exception
            :meth:`request` raises; the default gives a plain :class:`RpcError`, a layer
            with its own error classes passes its table (``switchboard.protocol.read_error``).
        params_readers: per method, a reader of a request's params straight from their JSON
            bytes (see ``messages.ParamsReaders``); a frame a reader declines is read in full.
    """

    def __init__(
        self,
        link: Link,
        *,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        name: str = "peer",
        default_timeout: float | None = 30.0,
        read_error: Callable[[Mapping[str, Any]], RpcError] = RpcError.from_wire,
        params_readers: ParamsReaders | None = None,
    ) -> None:
        self._link = link
        self._readers = params_readers
        self._on_request = on_request
        self._on_notification = on_notification
        self._name = name
        self._default_timeout = default_timeout
        self._log = structlog.get_logger(__name__).bind(peer=name, link=link.description)
        # What the remote may send again and again (a banner on stdout, an error that answers
        # nothing, a message a handler fails on ...): rate-limited, per kind.
        self._dropped = RateLimitedLog(self._log)
        self._pending = PendingRequests(link.description, read_error)
        self._outbox = Outbox(link)
        # Inbound requests not yet answered, in arrival order (a dict used as an ordered set).
        self._unanswered: dict[InboundCall, None] = {}
        self._inbox: deque[InboundCall | InboundNotification | InboundResponse] = deque()
        self._inbox_ready = anyio.Event()
        self._not_started: set[Deferred] = set()
        self._task_group: TaskGroup | None = None
        self._progress = anyio.Event()  # set whenever a message is handled or answered
        self._started = False
        self._eof = False
        self._closing = False
        self._stopped = anyio.Event()
        self._counts = [0, 0, 0, 0]  # requests sent/received, notifications sent/received

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self._name

    @property
    def closed(self) -> bool:
        """True once the peer is shutting down or stopped: nothing more can be sent."""
        return self._closing

    def __repr__(self) -> str:
        return f"<Peer {self._name} on {self._link.description}>"

    def statistics(self) -> PeerStatistics:
        """Counters and queue depths, as an immutable snapshot."""
        sent, received, notes_sent, notes_received = self._counts
        return PeerStatistics(
            sent,
            received,
            notes_sent,
            notes_received,
            len(self._pending),
            len(self._unanswered),
            len(self._inbox),
            len(self._outbox),
        )

    # -- public verbs --------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the link until it ends or :meth:`aclose` is called.

        On exit every outstanding outbound request fails with ``LinkClosedError``.
        """
        if self._started:
            raise RuntimeError(f"{self!r} is already running or has run")
        self._started = True
        try:
            if self._closing:
                return
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                tg.start_soon(self._write_loop)
                tg.start_soon(self._dispatch_loop)
                tg.start_soon(self._pending.watch_deadlines)
                await self._read_loop()
                await self._drain_after_eof()
                await self._shutdown("the link ended")
        finally:
            self._finish("the peer stopped")

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        # A per-call timeout is part of the contract: the default comes from the peer.
        timeout: Timeout = USE_DEFAULT,  # noqa: ASYNC109
        on_response: Callable[[Any], None] | None = None,
    ) -> Any:
        """Send a request and return its result.

        Args:
            method: the method name.
            params: a dict or a list (``None`` leaves ``params`` out).
            timeout: seconds to wait; ``None`` waits forever; default ``default_timeout``.
            on_response: called with the result in wire order: after every inbound message
                read before the response has been dispatched, and before any message read after
                it (for state that must change in wire order, such as readiness after a policy
                receipt). With nothing waiting to be dispatched it runs in the reader, the
                moment the response is read. If it raises, the exception is raised to the
                caller.

        Raises:
            RpcError: the remote answered with an error object (of the class ``read_error``
                chose).
            RequestTimeoutError: no response in time (a late one is dropped).
            LinkClosedError: the link closed first; the request may or may not have been
                processed by the remote.
            TypeError: ``params`` is neither a dict, a list nor ``None``.
        """
        if self._closing or self._eof:
            raise LinkClosedError(
                f"link {self._link.description} is closed; request {method!r} was not sent"
            )
        _check_params(method, params)
        self._counts[0] += 1
        return await self._pending.call(
            method,
            lambda request_id: encode_request(request_id, method, params),
            self._send_own,
            self._default_timeout if timeout is USE_DEFAULT else timeout,
            on_response,
            self._try_send_own,
        )

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification; waits only while the outbound queue is over its high mark.

        Raises:
            LinkClosedError: the peer is closed or the write failed.
            TypeError: ``params`` is neither a dict, a list nor ``None``.
        """
        if self._closing:
            raise LinkClosedError(
                f"link {self._link.description} is closed; notification {method!r} not sent"
            )
        _check_params(method, params)
        self._counts[2] += 1
        await self._send_own(encode_notification(method, params))

    async def written(self) -> None:
        """Return once the frames queued so far have left: taken from the queue, and passed
        to the OS by a link that can tell (a child's stdin; any other link once it took them).
        Returns at once on a closed peer. Lets work that can wait (an admission, say) start
        only after a large answer is out, instead of holding it up."""
        if self._closing:
            return
        await self._outbox.emptied()
        written = getattr(self._link, "written", None)
        if written is not None and not self._closing:
            await written()

    async def answered(self) -> None:
        """Return once every request received so far is answered (at once on a closed peer).

        What the caller does meanwhile decides whether more come: a host that is stopping
        refuses them (their answers come at once) while the ones it took finish.
        """
        while (self._inbox or self._unanswered) and not self._closing:
            await self._next_progress()

    async def quiet(self, seconds: float) -> None:
        """Return once every request received is answered and no message came for ``seconds``
        (at once on a closed peer): what the remote sent before it heard an answer that told
        it to stop is read and answered too."""
        while not self._closing:
            await self.answered()
            with anyio.move_on_after(seconds) as waited:
                await self._next_progress()
            if waited.cancelled_caught:
                return

    async def aclose(self) -> None:
        """Answer what is unanswered (best effort), close the link and stop :meth:`run`."""
        await self._shutdown("closed locally")
        if self._started:
            await self._stopped.wait()
        else:
            self._finish("closed before it ran")

    # -- the tasks -----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        receive = self._link.receive
        inbox = self._inbox
        readers = self._readers
        while True:
            try:
                frame = await receive()
            except LinkClosedError:
                return
            except FrameTooLargeError as exc:
                self._dropped.note("frame_too_large", "frame_too_large", limit=exc.limit)
                error = invalid_request(f"frame exceeds {exc.limit} bytes").to_wire()
                self._outbox.put(encode_error(None, error))
                continue
            except Exception:
                self._log.exception("link_read_failed")
                return
            for event in decode_frame(frame, readers):
                if isinstance(event, InboundCall):
                    self._unanswered[event] = None
                    inbox.append(event)
                    self._inbox_ready.set()
                elif isinstance(event, InboundNotification):
                    inbox.append(event)
                    self._inbox_ready.set()
                elif isinstance(event, InboundResponse):
                    if inbox and self._pending.in_wire_order(event):
                        # Messages read before it are judged first (the receipt that makes
                        # a session ready must not overtake a request sent before it).
                        inbox.append(event)
                        self._inbox_ready.set()
                    elif not self._pending.resolve(event):
                        self._unmatched(event)
                elif isinstance(event, ImmediateReply):
                    self._outbox.put(event.frame)
                else:
                    self._dropped.note(event.reason, event.reason, detail=event.detail)

    async def _dispatch_loop(self) -> None:
        inbox = self._inbox
        outbox = self._outbox
        while True:
            while not inbox:
                if outbox:  # the burst is handled: its answers leave in one write
                    await self._flush_or_shutdown()
                    continue
                ready = new_event()
                self._inbox_ready = ready
                await ready.wait()
            if outbox:
                # The next handler may suspend; let the writer send what is ready meanwhile.
                outbox.wake()
            item = inbox.popleft()
            if isinstance(item, InboundCall):
                self._counts[1] += 1
                await self._handle_call(item)
            elif isinstance(item, InboundResponse):
                if not self._pending.resolve(item):
                    self._unmatched(item)
            else:
                self._counts[3] += 1
                await self._handle_notification(item)
            self._progress.set()

    async def _write_loop(self) -> None:
        while True:
            await self._outbox.wait_for_frames()
            await self._flush_or_shutdown()

    # -- handling ------------------------------------------------------------------------

    async def _handle_call(self, call: InboundCall) -> None:
        handler = self._on_request
        if handler is None:
            error = method_not_found(call.method).to_wire()
            self._answer(call, encode_error(call.id, error), wake=False)
            return
        token = HANDLED_REQUEST_ID.set(call.id)
        try:
            result = await handler(call.method, call.params)
        except Exception as exc:
            self._answer_exception(call, exc, wake=False)
            return
        finally:
            HANDLED_REQUEST_ID.reset(token)
        if isinstance(result, Deferred):
            future = result.future
            if future is not None:
                if future.done():  # settled already (a commit made on this thread): answer now
                    self._settle_future(call, result, future)
                else:
                    future.add_done_callback(lambda done: self._settle_future(call, result, done))
                return
            assert self._task_group is not None
            self._not_started.add(result)
            self._task_group.start_soon(self._complete_deferred, call, result)
        else:
            self._answer_result(call, result, wake=False)

    def _settle_future(self, call: InboundCall, deferred: Deferred, done: Any) -> None:
        try:
            result = deferred.settle(done)
        except Exception as exc:
            self._answer_exception(call, exc)
        except BaseException as exc:  # a cancelled future: answer, never leave it hanging
            self._answer_exception(call, RuntimeError(f"the work was cancelled: {exc!r}"))
        else:
            self._answer_result(call, result, wake=False)
            # Nothing else in flight (one request at a time): the answer leaves from here,
            # before the work that need not hold it up. With requests in flight, answers
            # wait for the writer and leave together in one write.
            if self._unanswered or self._inbox or not self._outbox.write_now():
                self._outbox.wake()
            try:
                deferred.run_after(done)
            except Exception as exc:
                self._failed("after_answer_failed", call.method, exc)

    async def _complete_deferred(self, call: InboundCall, deferred: Deferred) -> None:
        self._not_started.discard(deferred)
        try:
            result = await deferred.wait()
        except Exception as exc:
            self._answer_exception(call, exc)
        else:
            self._answer_result(call, result)

    async def _handle_notification(self, note: InboundNotification) -> None:
        handler = self._on_notification
        if handler is None:
            self._log.debug("notification_dropped", method=note.method)
            return
        try:
            await handler(note.method, note.params)
        except Exception as exc:
            self._failed("notification_handler_failed", note.method, exc)

    def _answer_result(self, call: InboundCall, result: Any, *, wake: bool = True) -> None:
        try:
            frame = encode_result(call.id, result)
        except TypeError:
            self._log.exception("result_not_serializable", method=call.method)
            frame = encode_error(call.id, _INTERNAL)
        self._answer(call, frame, wake=wake)

    def _answer_exception(self, call: InboundCall, exc: Exception, *, wake: bool = True) -> None:
        error, unexpected = wire_error(exc)
        if unexpected:
            self._failed("request_handler_failed", call.method, exc)
        try:
            frame = encode_error(call.id, error)
        except TypeError:
            self._log.exception("error_not_serializable", method=call.method)
            frame = encode_error(call.id, _INTERNAL)
        self._answer(call, frame, wake=wake)

    def _answer(self, call: InboundCall, frame: bytes, *, wake: bool = True) -> None:
        """Send ``frame`` as the one answer to ``call`` (a later second answer is ignored).

        The dispatcher passes ``wake=False``: it flushes itself when its inbox runs dry.
        """
        if call.answered:
            return
        call.answered = True
        self._unanswered.pop(call, None)
        self._progress.set()
        if call.batch is not None:
            whole = call.batch.fill(call.slot, frame)
            if whole is None:
                return
            frame = whole
        self._outbox.put(frame, wake=wake)

    def _failed(self, event: str, method: str, exc: Exception) -> None:
        """A handler failed on what the remote sent: an ERROR with the traceback, rate-limited
        per kind and method (a remote could repeat what makes it fail)."""
        self._dropped.note((event, method), event, level="error", method=method, exc_info=exc)

    def _unmatched(self, response: InboundResponse) -> None:
        if response.id is None and response.error is not None:
            # The remote could not make sense of something we sent.
            self._dropped.note(
                "remote_reported_error", "remote_reported_error", error=response.error
            )
        else:
            self._log.debug("late_response_dropped", id=response.id)

    # -- output and shutdown -------------------------------------------------------------

    def _try_send_own(self, frame: bytes) -> bool:
        try:
            return self._outbox.try_send_own(frame)
        except Exception:  # the slow path (_send_own) meets it again, and shuts down
            return False

    async def _send_own(self, frame: bytes) -> None:
        try:
            await self._outbox.send_own(frame)
        except LinkClosedError:
            await self._shutdown("a write failed")
            raise

    async def _flush_or_shutdown(self) -> None:
        """Flush for the writer and the dispatcher; a failed write ends the peer."""
        try:
            await self._outbox.flush()
        except Exception as exc:
            self._outbox.clear()  # nothing more can be written; never retry in a loop
            if not isinstance(exc, LinkClosedError):
                self._log.exception("link_write_failed")
            await self._shutdown("a write failed")

    async def _drain_after_eof(self) -> None:
        """The remote sent EOF: no response can come, but what it asked still gets answered.

        A remote may close only its sending side (``echo request | connector``, a TCP
        half-close, a host closing a child's stdin) and still read, so the requests already
        received are handled and answered, for up to ``_EOF_DRAIN_GRACE`` seconds.
        """
        self._eof = True
        self._pending.fail_all()
        with anyio.move_on_after(_EOF_DRAIN_GRACE):
            while (self._inbox or self._unanswered) and not self._closing:
                await self._next_progress()

    async def _next_progress(self) -> None:
        """Wait for the next message handled or answered. Waiters share one event (a new one
        is made only once the last was set), so two of them never orphan each other's."""
        progress = self._progress
        if progress.is_set():
            progress = self._progress = new_event()
        await progress.wait()

    async def _shutdown(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        self._log.debug("peer_closing", reason=reason)
        self._pending.fail_all()
        for call in list(self._unanswered):
            self._answer(call, encode_error(call.id, _SHUTTING_DOWN))
        self._inbox.clear()
        with anyio.move_on_after(_SHUTDOWN_FLUSH_GRACE, shield=True):
            try:
                await self._outbox.flush()
            except Exception:  # best effort: the link may already be gone
                self._outbox.clear()
        with anyio.CancelScope(shield=True):
            try:
                await self._link.aclose()
            except Exception:
                self._log.exception("link_close_failed")
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()

    def _finish(self, reason: str) -> None:
        self._closing = True
        self._pending.fail_all()
        for deferred in self._not_started:
            deferred.discard()
        self._not_started.clear()
        self._stopped.set()
        self._dropped.flush()
        self._log.debug("peer_stopped", reason=reason)
