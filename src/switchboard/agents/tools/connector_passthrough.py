"""The connectors' own MCP tools, passed through to the agents (docs/tools.md, "Connector tools").

Each ready connector granted ``tools`` has its tools listed after Switchboard's, under
namespaced names; a call is forwarded unchanged through the port and its result passed back;
agents are told (``notifications/tools/list_changed``) when the lists change.

What it deliberately does not know: how the host reaches a connector (the port does), and
Switchboard's own tools (their names are handed in as reserved).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent, ToolsListChanged
from mcp.types import CallToolResult, Tool, ToolAnnotations
from pydantic import ValidationError

from switchboard.agents.port.protocol import AgentPort, ConnectorTool
from switchboard.agents.tools.results import MAX_ANSWER_BYTES, answer_bytes, refused
from switchboard.refusals.refusal import Refusal, RefusalKind

__all__ = [
    "HASH_DIGITS",
    "MAX_CONNECTIONS",
    "NAME_LIMIT",
    "SEPARATOR",
    "ConnectorPassthrough",
    "ListenedBus",
    "ToolListNotifier",
    "agent_names",
    "hashed_name",
    "plain_name",
]

log = structlog.get_logger(__name__)

NAME_LIMIT = 64
"""The longest tool name MCP clients accept."""
SEPARATOR = "__"
"""Between the server id and the tool's name."""
HASH_DIGITS = 10
"""Hex digits of the hash that makes a name unique when the plain one cannot be used."""
MAX_CONNECTIONS = 256
"""The most handshake-era agent connections told of changes (the oldest are forgotten)."""

_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def plain_name(server_id: str, tool: str) -> str:
    """``<serverId>__<tool>`` with characters clients refuse replaced by ``_`` (not cut)."""
    return f"{_OUTSIDE.sub('_', server_id)}{SEPARATOR}{_OUTSIDE.sub('_', tool)}"


def hashed_name(server_id: str, tool: str) -> str:
    """The plain name cut short, ``_`` and a hash of the exact server id and tool name."""
    digest = hashlib.sha256(f"{server_id}\0{tool}".encode()).hexdigest()[:HASH_DIGITS]
    return f"{plain_name(server_id, tool)[: NAME_LIMIT - HASH_DIGITS - 1]}_{digest}"


def agent_names(
    tools: Iterable[ConnectorTool], reserved: frozenset[str]
) -> dict[str, ConnectorTool]:
    """The name each tool is shown by (see :class:`ConnectorPassthrough`); a name left taken is
    logged and its tool left out."""
    listed = list(tools)
    plain = [plain_name(t.server_id, t.name) for t in listed]
    counts = Counter(plain)
    named: dict[str, ConnectorTool] = {}
    for tool, name in zip(listed, plain, strict=True):
        if counts[name] > 1 or name in reserved or len(name) > NAME_LIMIT:
            name = hashed_name(tool.server_id, tool.name)
        if name in named or name in reserved:
            log.warning(
                "connector_tool_name_taken_left_out",
                server_id=tool.server_id,
                tool=tool.name,
                name=name,
            )
            continue
        named[name] = tool
    return named


def _description(tool: ConnectorTool) -> str:
    origin = f"From connector {tool.server_id!r} (its tool {tool.name!r})."
    return origin if not tool.description else f"{origin} {tool.description}"


def _mcp_tool(name: str, tool: ConnectorTool) -> Tool:
    annotations: ToolAnnotations | None = None
    if tool.annotations is not None:
        try:
            annotations = ToolAnnotations.model_validate(tool.annotations)
        except ValidationError:
            log.info("connector_tool_annotations_dropped", server_id=tool.server_id, tool=tool.name)
    return Tool(
        name=name,
        title=tool.title,
        description=_description(tool),
        input_schema=dict(tool.input_schema),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        annotations=annotations,
    )


class ConnectorPassthrough:
    """The connector tools one agent's server shows and calls.

    What it knows (docs/tools.md, "Connector tools"):

    - **Names.** A connector's tool is shown as ``<serverId>__<tool>``, each part with every
      character outside ``[A-Za-z0-9_-]`` replaced by ``_`` (MCP clients such as Claude Desktop and
      Claude Code accept only ``^[a-zA-Z0-9_-]{1,64}$``). When that plain name is longer than 64
      characters, is also the plain name of another connector tool (``a.b`` and ``a_b``, or server
      ``x__y`` beside server ``x``), or is the name of one of Switchboard's own tools, *every* tool
      concerned gets the hashed form instead: the plain name cut to 53 characters, ``_`` and the
      first 10 hex digits of the SHA-256 of ``serverId``, a NUL and the tool's name. Names therefore
      depend only on the tools listed, never on the order they arrived, and nothing ever shadows
      anything: a name still taken after that is left out and logged.
    - **Listing.** :meth:`ConnectorPassthrough.tools` gives each tool as an MCP ``Tool`` with the
      connector's input schema, output schema, title and annotations as given, and a description
      that starts by saying which connector (and which of its tools) it comes from.
    - **Calling.** :meth:`ConnectorPassthrough.call` forwards the arguments unchanged through the
      port and passes the connector's result back (``content``, ``structuredContent``, ``isError``).
      A name that is not a connector tool's, a connector that is gone, connecting or not granted
      ``tools``, and a connector error are refusals, turned into ``isError`` results by
      :func:`~switchboard.agents.tools.results.refused`. A name shown earlier keeps meaning its
      tool, so a call after the connector left is refused as ``server-gone``, not ``unknown-tool``.
    - **Change notices** (:class:`ToolListNotifier`). When the port says the connector tools may
      have changed, every connected agent is sent ``notifications/tools/list_changed`` once per
      change: on handshake-era connections through the session of the connection's ``initialize``
      request (remembered by a server middleware, which also advertises ``tools.listChanged`` in the
      ``initialize`` result; at most :data:`MAX_CONNECTIONS` are remembered, the oldest forgotten
      first, and one whose send fails is forgotten), on 2026-07-28 connections through the SDK's
      ``subscriptions/listen`` bus. The sending runs in the server's lifespan, never inside the
      host's event bus.

    Args:
        port: The agent's port.
        reserved: Switchboard's own tool names (a connector tool never takes one).
    """

    __slots__ = ("_port", "_reserved", "_shown")

    def __init__(self, port: AgentPort, *, reserved: frozenset[str]) -> None:
        self._port = port
        self._reserved = reserved
        self._shown: dict[str, tuple[str, str]] = {}
        """Every name shown so far and the (server id, tool) it stands for."""

    def _current(self) -> dict[str, ConnectorTool]:
        named = agent_names(self._port.connector_tools(), self._reserved)
        for name, tool in named.items():
            self._shown[name] = (tool.server_id, tool.name)
        return named

    def tools(self) -> list[Tool]:
        """Every connector tool, named for the agent."""
        return [_mcp_tool(name, tool) for name, tool in self._current().items()]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call the connector tool shown as ``name``; its result, or a refusal as a result."""
        current = self._current().get(name)
        target = (current.server_id, current.name) if current else self._shown.get(name)
        if target is None:
            return refused(
                Refusal(
                    RefusalKind.UNKNOWN_TOOL,
                    f"there is no tool named {name!r}; nothing was called.",
                    tool=name,
                )
            )
        server_id, tool = target
        try:
            raw = await self._port.call_connector_tool(server_id, tool, arguments)
        except Refusal as exc:
            return refused(exc)
        try:
            result = CallToolResult.model_validate(dict(raw))
        except ValidationError as exc:
            return refused(
                Refusal(
                    RefusalKind.CONNECTOR_FAILED,
                    f"connector {server_id!r} answered the call of its tool {tool!r} with "
                    f"something that is not a tool result ({exc.error_count()} problems, the "
                    f"first at {'.'.join(map(str, exc.errors()[0]['loc'])) or 'the top'}); "
                    "it may have run.",
                    "check whether it took effect before calling it again",
                    server_id=server_id,
                    tool=tool,
                )
            )
        size = answer_bytes(result)
        if size > MAX_ANSWER_BYTES:
            return refused(
                Refusal(
                    RefusalKind.CONNECTOR_FAILED,
                    f"connector {server_id!r} answered the call of its tool {tool!r} with "
                    f"{size} bytes, more than the {MAX_ANSWER_BYTES} an answer may take; it "
                    "ran, but its answer is not passed on.",
                    "call it again asking for less (a narrower query or a smaller page), or "
                    "check its effect another way",
                    server_id=server_id,
                    tool=tool,
                    bytes=size,
                )
            )
        return result


class ListenedBus(InMemorySubscriptionBus):
    """The SDK's in-process subscription bus, counting its listeners: :attr:`listened` says
    whether an event published now would reach anyone, so a hot path can skip publishing one
    that would not (the inbox push, once per incoming batch)."""

    def __init__(self) -> None:
        super().__init__()
        self._count = 0

    @property
    def listened(self) -> bool:
        """Whether any listener is subscribed now."""
        return self._count > 0

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register ``listener``; return an idempotent unsubscribe callable."""
        unsubscribe = super().subscribe(listener)
        self._count += 1
        gone = False

        def counted_unsubscribe() -> None:
            nonlocal gone
            if not gone:
                gone = True
                self._count -= 1
            unsubscribe()

        return counted_unsubscribe


class ToolListNotifier:
    """Sends ``notifications/tools/list_changed`` to every connected agent (see the module
    docstring). :meth:`middleware` and :meth:`lifespan` go to the ``MCPServer``, :attr:`bus`
    as its ``subscriptions``; :meth:`changed` is the port's listener."""

    def __init__(self) -> None:
        self.bus = ListenedBus()
        self._generation = 0
        self._published = 0
        self._sessions: dict[ServerSession, int] = {}
        """Each connection's ``initialize`` session and the change it was last told of."""
        self._wake: anyio.Event | None = None

    def changed(self) -> None:
        """The connector tools may have changed (runs in the host's event bus: never blocks)."""
        self._generation += 1
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """At ``initialize``: remember the connection and advertise ``tools.listChanged``."""
        result: HandlerResult = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            tools = result.get("capabilities", {}).get("tools")
            if isinstance(tools, dict):
                tools["listChanged"] = True
            # The session outlives its request: its standalone channel is the connection's.
            self._sessions[ctx.session] = self._generation
            while len(self._sessions) > MAX_CONNECTIONS:
                del self._sessions[next(iter(self._sessions))]
        return result

    @asynccontextmanager
    async def lifespan(self, _server: object) -> AsyncIterator[dict[str, Any]]:
        """Forward changes while a connection (or the HTTP app) is served."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._forward)
            try:
                yield {}
            finally:
                tg.cancel_scope.cancel()

    async def _forward(self) -> None:
        while True:
            if self._wake is None:
                self._wake = anyio.Event()
            wake = self._wake
            await self._deliver()
            await wake.wait()

    async def _deliver(self) -> None:
        generation = self._generation
        if self._published < generation:
            self._published = generation
            await self.bus.publish(ToolsListChanged())
        for session, told in list(self._sessions.items()):
            if told >= generation:
                continue
            self._sessions[session] = generation
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a connection that ended: forget it
                log.debug("tool_list_changed_not_sent", error=repr(exc))
                self._sessions.pop(session, None)
