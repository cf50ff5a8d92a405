"""One connection's MCP tools: the host's mirror of the connector's ``tools/list``, and calls.

A ready session whose grant allows ``tools`` fetches the connector's list (bounded, paged,
fetched again on ``notifications/tools/list_changed``), tells each change on the host's bus,
and forwards calls as they come (docs/tools.md, "Connector tools"). A call is an ordinary
request: the peer keeps dispatching what the connector sends while it is outstanding, so a
connector that pushes before answering is served.

What it deliberately does not know: agents, tool names as agents see them, and refusals (the
agent's port decides what a missing server or tool means).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import structlog

from switchboard.events import ConnectorToolsChanged, EventBus
from switchboard.protocol import Grant
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.transport import LinkClosedError, Peer, RequestTimeoutError, RpcError

__all__ = ["MAX_PAGES", "MAX_TOOLS", "ConnectorTool", "ConnectorTools", "read_tool"]

log = structlog.get_logger(__name__)


class ToolsSession(Protocol):
    """What the connector tools read of their connection (a ``ConnectorSession``)."""

    server_id: str
    grant: Grant
    noted: RateLimitedLog

    @property
    def peer(self) -> Peer | None: ...

    @property
    def mcpl_active(self) -> bool: ...

    async def wait_ready(self) -> None: ...


#: The most ``tools/list`` pages one fetch follows.
MAX_PAGES = 16
#: The most tools kept from one connector.
MAX_TOOLS = 512


@dataclass(frozen=True, slots=True)
class ConnectorTool:
    """One MCP tool a connector lists, as it listed it.

    Attributes:
        server_id: The connector that lists it.
        name: Its name on the connector (not the name an agent sees).
        description: Its description, if any.
        title: Its display title, if any.
        input_schema: Its JSON schema for arguments, as given.
        output_schema: Its JSON schema for structured results, when given.
        annotations: Its MCP annotations (hints such as ``readOnlyHint``), when given.
    """

    server_id: str
    name: str
    description: str | None
    title: str | None
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None


def read_tool(server_id: str, raw: Any) -> ConnectorTool | str:
    """The tool ``raw`` (one entry of ``tools/list``) describes, or why it is left out."""
    if not isinstance(raw, Mapping):
        return f"an entry is a {type(raw).__name__}, not an object"
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return "an entry has no string name"
    schema = raw.get("inputSchema")
    if not isinstance(schema, Mapping):
        return f"tool {name!r} has no object inputSchema"
    output = raw.get("outputSchema")
    annotations = raw.get("annotations")
    description = raw.get("description")
    title = raw.get("title")
    return ConnectorTool(
        server_id=server_id,
        name=name,
        description=description if isinstance(description, str) else None,
        title=title if isinstance(title, str) else None,
        input_schema=dict(schema),
        output_schema=dict(output) if isinstance(output, Mapping) else None,
        annotations=dict(annotations) if isinstance(annotations, Mapping) else None,
    )


class ConnectorTools:
    """The MCP tools of one connection.

    What it knows (docs/tools.md, "Connector tools"; MCPL §5.4, mcpl-protocol.md 1.3 and A-12):

    - **When a connector has tools.** Only a session that is ready (MCPL in force) and whose grant
      allows ``tools`` has any. The ``tools`` leaf is advertised by the connector's MCP
      ``capabilities.tools`` in its ``initialize`` result, so a grant that allows it implies the
      advertisement. The grant is read when asked, so a manifest change that revokes ``tools`` hides
      the tools at once.
    - **Fetching.** :class:`ConnectorTools.run` waits until the session is ready, fetches
      ``tools/list`` (following ``nextCursor`` for at most :data:`MAX_PAGES` pages and keeping at
      most :data:`MAX_TOOLS` tools; a repeated cursor ends the walk), and fetches again after each
      ``notifications/tools/list_changed`` (announcements that arrive during a fetch are folded into
      one more fetch). A tool without a string ``name`` or an object ``inputSchema``, or a name
      listed twice, is left out and logged as a connector defect. A fetch that fails keeps the
      previous list and is logged.
    - **Telling.** Each fetch whose list differs from the one held, and the end of the session when
      it held tools, is told as :class:`~switchboard.events.ConnectorToolsChanged` on the host's
      bus.
    - **Calling.** :meth:`ConnectorTools.call` forwards one ``tools/call`` and returns the
      connector's result object as it came. The call is an ordinary host request on the session's
      peer: while it is outstanding the peer keeps dispatching what the connector sends, so a
      connector that sends a ``push/event`` *before* answering the call (heartbeat-mcpl,
      dog_events_mcpl; peers.md §4, §7) is served.

    Args:
        session: The connection whose tools these are (its peer, state and grant are read
            when needed).
        events: Where a changed list is told.

    Attributes:
        fetches: ``tools/list`` walks started.
        announcements: ``notifications/tools/list_changed`` received.
    """

    def __init__(self, session: ToolsSession, *, events: EventBus) -> None:
        self._session = session
        self._events = events
        self._held: tuple[ConnectorTool, ...] = ()
        self._wanted = anyio.Event()
        self.fetches = 0
        self.announcements = 0
        self.log = log.bind(server_id=session.server_id)
        # A connector may list its tools badly again and again: what that makes the host say
        # is the session's rate-limited log, per kind.
        self._noted = session.noted

    @property
    def granted(self) -> bool:
        """Whether the connection is ready and its grant allows ``tools`` now."""
        session = self._session
        return session.mcpl_active and session.grant.allows("tools")

    @property
    def tools(self) -> tuple[ConnectorTool, ...]:
        """The tools an agent may call now (none unless :attr:`granted`)."""
        return self._held if self.granted else ()

    def find(self, name: str) -> ConnectorTool | None:
        """The tool the connector calls ``name``, if it lists one and it may be called now."""
        return next((t for t in self.tools if t.name == name), None)

    def announce(self) -> None:
        """Take a ``notifications/tools/list_changed``; never blocks (it runs in the dispatcher)."""
        self.announcements += 1
        self._wanted.set()

    async def run(self) -> None:
        """Fetch the list once the session is ready, again after each announcement; on the
        way out (the session ends) drop the tools and tell so."""
        try:
            await self._session.wait_ready()
            self._wanted.set()
            while True:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                if self.granted:
                    await self._fetch()
        finally:
            if self._held:
                self._held = ()
                self._events.emit(ConnectorToolsChanged(self._session.server_id, ()))

    async def _fetch(self) -> None:
        peer = self._session.peer
        if peer is None:
            return
        self.fetches += 1
        found: list[ConnectorTool] = []
        seen_names: set[str] = set()
        cursors: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            try:
                page = await peer.request("tools/list", params)
            except (RpcError, RequestTimeoutError, LinkClosedError) as exc:
                self._noted.note(
                    ("connector_tools_fetch_failed_previous_kept",),
                    "connector_tools_fetch_failed_previous_kept",
                    error=str(exc),
                )
                return
            if not isinstance(page, Mapping) or not isinstance(page.get("tools"), list):
                self._noted.note(
                    ("connector_tools_list_malformed_previous_kept",),
                    "connector_tools_list_malformed_previous_kept",
                    got=type(page).__name__,
                )
                return
            for raw in page["tools"]:
                tool = read_tool(self._session.server_id, raw)
                if isinstance(tool, str):
                    self._noted.note(
                        ("connector_tool_skipped",), "connector_tool_skipped", reason=tool
                    )
                elif tool.name in seen_names:
                    self._noted.note(
                        ("connector_tool_skipped",),
                        "connector_tool_skipped",
                        reason=f"{tool.name!r} listed twice",
                    )
                elif len(found) >= MAX_TOOLS:
                    self._noted.note(
                        ("connector_tools_truncated",), "connector_tools_truncated", kept=MAX_TOOLS
                    )
                    break
                else:
                    seen_names.add(tool.name)
                    found.append(tool)
            nxt = page.get("nextCursor")
            if not isinstance(nxt, str) or not nxt or len(found) >= MAX_TOOLS:
                break
            if nxt in cursors:
                self._noted.note(
                    ("connector_tools_cursor_repeated",),
                    "connector_tools_cursor_repeated",
                    cursor=nxt,
                )
                break
            cursors.add(nxt)
            cursor = nxt
        else:
            self._noted.note(
                ("connector_tools_pages_truncated",),
                "connector_tools_pages_truncated",
                pages=MAX_PAGES,
                kept=len(found),
            )
        fetched = tuple(found)
        if fetched != self._held:
            self._held = fetched
            self._noted.note(
                ("connector_tools_listed",),
                "connector_tools_listed",
                level="info",
                tools=[t.name for t in fetched],
            )
            self._events.emit(
                ConnectorToolsChanged(self._session.server_id, tuple(t.name for t in fetched))
            )

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Forward ``tools/call`` for the connector's tool ``name``; return its result as given.

        Raises:
            RpcError: The connector answered with an error object.
            RequestTimeoutError: No answer within the connection's request timeout.
            LinkClosedError: The link closed first (the tool may or may not have run).
        """
        peer = self._session.peer
        if peer is None:
            raise LinkClosedError(f"connector {self._session.server_id!r} is not connected")
        return await peer.request("tools/call", {"name": name, "arguments": dict(arguments)})
