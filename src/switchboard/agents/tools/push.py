"""Push: new messages told to the agent as they arrive, never acknowledged by being told.

Claude Code's ``notifications/claude/channel`` per message, and the ``switchboard://inbox``
resource with ``resources/subscribe`` (docs/tools.md, "Push"). A push is not a delivery: the
messages stay owed until an ``inbox`` read acknowledges them, so pushes are best-effort. The
port's listener only queues (it runs in the host's event bus); the sending runs in the server's
lifespan.

What it deliberately does not know: how the host finds the messages (the port does), and the
other tools of the server.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, cast

import anyio
import structlog
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    EmptyResult,
    Notification,
    ServerNotification,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

from switchboard.agents.port.protocol import AgentPort, Arrival, message_text
from switchboard.channels import ChannelRef
from switchboard.runtime.ratelog import RateLimitedLog

__all__ = [
    "CHANNEL_CAPABILITY",
    "CHANNEL_NOTIFICATION",
    "INBOX_URI",
    "MAX_CONNECTIONS",
    "MAX_QUEUED",
    "PEEK_LIMIT",
    "ChannelPush",
    "InboxPush",
    "channel_params",
]

log = structlog.get_logger(__name__)

CHANNEL_CAPABILITY = "claude/channel"
"""The experimental server capability Claude Code looks for to accept channel notifications."""
CHANNEL_NOTIFICATION = "notifications/claude/channel"
"""The notification Claude Code injects into the session as a ``<channel>`` block."""
INBOX_URI = "switchboard://inbox"
"""The resource that shows what is owed to the agent."""
MAX_CONNECTIONS = 256
"""The most handshake-era connections pushed to (the oldest are forgotten)."""
MAX_QUEUED = 1000
"""The most arrivals waiting to be pushed (the oldest are dropped: the inbox keeps them)."""
PEEK_LIMIT = 50
"""The most messages the inbox resource lists."""


class ChannelPush(BaseModel):
    """The ``params`` of ``notifications/claude/channel``: the text and its attributes."""

    content: str
    meta: dict[str, str]


_ChannelNotification = Notification[dict[str, Any], Literal["notifications/claude/channel"]]


def channel_params(port: AgentPort, arrival: Arrival) -> ChannelPush:
    """The ``params`` of the ``notifications/claude/channel`` that tells of ``arrival``."""
    meta = {"server_id": arrival.ref.server_id}
    if arrival.ref.channel_id:
        meta["channel"] = port.name_shown(arrival.ref)
    meta |= {"author": arrival.author, "message_id": arrival.message_id, "time": arrival.timestamp}
    if arrival.thread_id:
        meta["thread_id"] = arrival.thread_id
    return ChannelPush(content=arrival.text, meta=meta)


def _connection_of(session: ServerSession) -> object:
    """What identifies the connection of ``session`` (a session is made per request)."""
    return cast(object, getattr(session, "_connection", session))


class InboxPush:
    """Pushes one agent's new messages. :meth:`middleware`,
    :meth:`lifespan`, :meth:`subscribe`, :meth:`unsubscribe` and :meth:`read` go to the
    ``MCPServer``; the port is watched from construction.

    What it knows (docs/tools.md, "Push"):

    - **Claude Code channels.** The server declares ``experimental["claude/channel"]`` in its
      ``initialize`` result (and in ``server/discover``), and sends one
      ``notifications/claude/channel`` per message committed for the agent, in commit order, with
      ``params`` ``{"content": <the text>, "meta": {...}}``. ``meta`` holds strings under identifier
      keys (Claude Code turns each into an attribute of the ``<channel>`` block and drops keys that
      are not identifiers): ``channel`` (the name that picks the channel, as ``channel_list`` shows
      it: pass it as ``channel_publish``'s ``channel`` to reply), ``server_id``, ``author``,
      ``message_id``, ``time`` and, in a thread, ``thread_id``. A push event that names no channel
      carries no ``channel``. The notification goes to every handshake-era connection (remembered
      from its ``initialize`` request, at most :data:`MAX_CONNECTIONS`, the oldest forgotten first,
      one whose send fails forgotten); no client capability is required, because Claude Code
      declares none and clients that do not know the method drop it, as JSON-RPC lets them.
    - **The inbox resource** (:data:`INBOX_URI`). Reading it lists what is owed above the
      acknowledged position (:meth:`~switchboard.agents.port.AgentPort.peek_inbox`): it acknowledges
      nothing and begins no turn. ``resources/subscribe`` to it makes the server send
      ``notifications/resources/updated`` whenever messages arrive (subscribers are remembered per
      connection, at most :data:`MAX_CONNECTIONS`); on 2026-07-28 connections the same change goes
      out on the SDK's ``subscriptions/listen`` bus.
    - **At least once.** A push is not a delivery: the messages stay owed until an ``inbox`` read
      hands them out and is acknowledged (docs/tools.md, "Delivery"). Pushes are therefore
      best-effort: arrivals while no connection is served are not queued, and past
      :data:`MAX_QUEUED` waiting arrivals the oldest are dropped with a warning, for the inbox still
      holds them.
    - **Where the work runs.** The port's listener only queues (it runs in the host's event bus);
      the sending runs in the server's lifespan.
    """

    def __init__(self, port: AgentPort, bus: SubscriptionBus) -> None:
        self._port = port
        self._bus = bus
        self._sessions: dict[ServerSession, None] = {}
        """Each handshake-era connection's ``initialize`` session, oldest first."""
        self._subscribed: dict[object, ServerSession] = {}
        """Each connection subscribed to :data:`INBOX_URI`, by connection."""
        self._queue: deque[Arrival] = deque()
        self._serving = 0
        self._sending = anyio.Lock()
        self._wake: anyio.Event | None = None
        self._changed = False
        """Arrivals came while no connection took channel notifications."""
        # Every incoming batch may overflow a queue an agent's client does not drain: the
        # line that says so is rate-limited, with the drops summed.
        self._overflow = RateLimitedLog(log)
        port.watch_inbox(self.arrived, self._wants_messages)

    # -- the host side (never blocks) -----------------------------------------------------

    def arrived(self, arrivals: Sequence[Arrival]) -> None:
        """Messages were committed for the agent: queue them to push (runs in the host's
        event bus, so it only queues)."""
        if not self._serving:
            return
        if not self._sessions or not arrivals:
            # No connection takes channel notifications: only "the inbox changed" is owed
            # (one resource update per drain), so no per-message work is queued; and when no
            # one is subscribed to hear it, nothing is owed (no wake per incoming batch).
            if not self._subscribed and not getattr(self._bus, "listened", True):
                return
            self._changed = True
        else:
            self._queue.extend(arrivals)
        dropped = len(self._queue) - MAX_QUEUED
        if dropped > 0:
            for _ in range(dropped):
                self._queue.popleft()
            self._overflow.note(
                "push_dropped_oldest",
                "push_dropped_oldest",
                summed=("dropped",),
                agent=self._port.agent,
                dropped=dropped,
            )
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def _wants_messages(self) -> bool:
        """Whether arrivals are wanted one by one: only while a connection takes channel
        notifications (else one "the inbox changed" per batch is all that is owed)."""
        return bool(self._serving and self._sessions)

    # -- the MCP side ---------------------------------------------------------------------

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """Declare ``claude/channel``; at ``initialize`` remember the connection."""
        result: HandlerResult = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            capabilities = result.setdefault("capabilities", {})
            if isinstance(capabilities, dict):
                experimental = capabilities.setdefault("experimental", {})
                if isinstance(experimental, dict):
                    experimental[CHANNEL_CAPABILITY] = {}
        if ctx.method == "initialize":
            # The session outlives its request: its standalone channel is the connection's.
            self._sessions[ctx.session] = None
            while len(self._sessions) > MAX_CONNECTIONS:
                del self._sessions[next(iter(self._sessions))]
        return result

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        """``resources/subscribe``: only :data:`INBOX_URI` can be subscribed to."""
        self._only_inbox(params.uri, "subscribed to")
        self._subscribed[_connection_of(ctx.session)] = ctx.session
        while len(self._subscribed) > MAX_CONNECTIONS:
            del self._subscribed[next(iter(self._subscribed))]
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        """``resources/unsubscribe`` (a connection not subscribed is no error)."""
        self._only_inbox(params.uri, "unsubscribed from")
        self._subscribed.pop(_connection_of(ctx.session), None)
        return EmptyResult()

    @staticmethod
    def _only_inbox(uri: str, what: str) -> None:
        if uri != INBOX_URI:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"no resource {uri!r} can be {what}; nothing changed. Next: use "
                f"{INBOX_URI!r}, the one resource this server offers.",
                data={"uri": uri},
            )

    async def read(self) -> str:
        """The text of :data:`INBOX_URI`: one line per owed message, acknowledging nothing."""
        port = self._port
        owed = await port.peek_inbox(limit=PEEK_LIMIT + 1)
        shown = owed[:PEEK_LIMIT]
        lines = [
            f"{m.timestamp} {self._where(m.server_id, m.channel_id)} {m.author_name}: "
            f"{message_text(m)} (id {m.message_id})"
            for m in shown
        ]
        more = " (more are waiting)" if len(owed) > PEEK_LIMIT else ""
        head = (
            f"{len(shown)} message{'' if len(shown) == 1 else 's'} owed to you{more}. "
            "Reading this resource acknowledges "
            "nothing: call the inbox tool to read them, and pass its cursor as `after` to "
            "acknowledge."
        )
        return "\n".join([head, *lines])

    def _where(self, server_id: str, channel_id: str) -> str:
        if not channel_id:
            return server_id
        return self._port.name_shown(ChannelRef(server_id, channel_id))

    @asynccontextmanager
    async def lifespan(self, _server: object) -> AsyncIterator[dict[str, Any]]:
        """Push arrivals while a connection (or the HTTP app) is served."""
        self._serving += 1
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._forward)
                try:
                    yield {}
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._serving -= 1
            if not self._serving:
                self._queue.clear()

    async def _forward(self) -> None:
        while True:
            if self._wake is None:
                self._wake = anyio.Event()
            wake = self._wake
            async with self._sending:
                await self._drain()
            await wake.wait()

    async def _drain(self) -> None:
        if not self._queue and not self._changed:
            return
        self._changed = False
        while self._queue:
            arrival = self._queue.popleft()
            params = channel_params(self._port, arrival)
            note = cast(
                ServerNotification,
                _ChannelNotification(method=CHANNEL_NOTIFICATION, params=params.model_dump()),
            )
            for session in list(self._sessions):
                try:
                    await session.send_notification(note)
                except Exception as exc:  # a connection that ended: forget it
                    log.debug("channel_push_not_sent", error=repr(exc))
                    self._sessions.pop(session, None)
        await self._bus.publish(ResourceUpdated(INBOX_URI))
        for key, session in list(self._subscribed.items()):
            try:
                await session.send_resource_updated(INBOX_URI)
            except Exception as exc:  # a connection that ended: forget it
                log.debug("inbox_updated_not_sent", error=repr(exc))
                self._subscribed.pop(key, None)
