"""The agent-facing MCP server: Switchboard's channels as tools.

One ``MCPServer`` per agent, over that agent's :class:`~switchboard.agents.port.AgentPort`: the
tools of each concern module in a fixed order, pushes of new messages, the connectors' own
tools listed after Switchboard's, and each session offered to answer the connectors' inference
when its client can sample. A ``Refusal`` inside a tool becomes an ``isError`` result at
the tool boundary.

What it deliberately does not know: anything of the host but its port (the composition root
makes each agent's port and serves it with :func:`server_for`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    CallToolResult,
    CancelledNotificationParams,
    InputRequiredResult,
    SubscribeRequestParams,
    Tool,
    UnsubscribeRequestParams,
)
from pydantic import ValidationError

from switchboard import __version__
from switchboard.agents.port.protocol import AgentPort
from switchboard.agents.tools.agent_tools import TOOLS as AGENT_TOOLS
from switchboard.agents.tools.channel_tools import TOOLS as CHANNEL_TOOLS
from switchboard.agents.tools.channel_tools import inbox_cancelled
from switchboard.agents.tools.connector_passthrough import ConnectorPassthrough, ToolListNotifier
from switchboard.agents.tools.lifecycle_tools import TOOLS as LIFECYCLE_TOOLS
from switchboard.agents.tools.message_tools import TOOLS as MESSAGE_TOOLS
from switchboard.agents.tools.presence_tools import TOOLS as PRESENCE_TOOLS
from switchboard.agents.tools.push import INBOX_URI, InboxPush
from switchboard.agents.tools.results import REFUSAL_META, refused, still_connecting
from switchboard.agents.tools.sampling import SamplingOffer
from switchboard.agents.tools.task_tools import TOOLS as TASK_TOOLS
from switchboard.agents.tools.tuneout_tools import TOOLS as TUNEOUT_TOOLS
from switchboard.refusals.refusal import Refusal, RefusalKind

__all__ = ["INSTRUCTIONS", "OWN_TOOLS", "SwitchboardServer", "argument_refusal", "server_for"]

INSTRUCTIONS = """\
Switchboard connects you to chat channels. Call `inbox` to read what people wrote (pass
wait_seconds to wait for new messages), `channel_list` to see the channels and the name that
picks each one, and `channel_publish` to write into a channel (or `speak`, whose
description says where your prose goes). A read that returns messages begins your next turn: replies
without a named channel go where that turn's `locus` says.

Messages stay owed until you acknowledge them: pass the `cursor` of an `inbox` answer as
`after` on your next `inbox` call. A message you did not acknowledge comes again, with the same
`message_id` and `redelivered` set, so skip the ids you have already handled.

New messages may also be pushed to you as they arrive, as a <channel> block whose attributes
say where it came from: `channel`, `author`, `message_id`, `time`, `server_id`. To reply, call
`channel_publish` with `channel` set to that `channel` attribute exactly (add `server_id` if
the name is refused as ambiguous) and your reply as `text`. A push is not an acknowledgement:
the message also comes in your next `inbox` read, with the same `message_id`; read `inbox` to
acknowledge it and do not answer it twice. The resource `switchboard://inbox` lists what is
owed without acknowledging anything."""

_TOOL_SETS = (
    CHANNEL_TOOLS,
    MESSAGE_TOOLS,
    LIFECYCLE_TOOLS,
    TUNEOUT_TOOLS,
    PRESENCE_TOOLS,
    AGENT_TOOLS,
    TASK_TOOLS,
)
"""Every tool, in the order ``tools/list`` shows them."""

OWN_TOOLS = frozenset(name for tools in _TOOL_SETS for name in tools.names)
"""Switchboard's own tool names: no connector tool is ever shown by one of them."""


class SwitchboardServer(MCPServer[dict[str, Any]]):
    """The ``MCPServer`` of one agent: Switchboard's tools, then the connectors' tools."""

    def __init__(self, port: AgentPort) -> None:
        notifier = ToolListNotifier()
        push = InboxPush(port, notifier.bus)
        sampling = SamplingOffer(port)

        @asynccontextmanager
        async def lifespan(server: object) -> AsyncIterator[dict[str, Any]]:
            async with notifier.lifespan(server) as state, push.lifespan(server):
                yield state

        offered = [tool for tools in _TOOL_SETS for tool in tools.tools_for(port)]
        super().__init__(
            "switchboard",
            version=__version__,
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            middleware=[notifier.middleware, push.middleware, sampling.middleware],
            lifespan=lifespan,
            subscriptions=notifier.bus,
            tools=offered,
        )
        self._port = port
        self._passthrough = ConnectorPassthrough(port, reserved=OWN_TOOLS)
        #: Switchboard's own tools this agent is offered (the rest of OWN_TOOLS are refused).
        self._offered = frozenset(tool.name for tool in offered)
        port.watch_connector_tools(notifier.changed)
        self.resource(
            INBOX_URI,
            name="inbox",
            title="What is owed to you",
            description="The messages owed to you, one line each; reading it acknowledges "
            "nothing (the inbox tool reads and acknowledges). Subscribe to be told when "
            "messages arrive.",
            mime_type="text/plain",
        )(push.read)
        # MCPServer serves no resources/subscribe of its own: the low-level server takes it.
        lowlevel = self._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, push.subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, push.unsubscribe
        )
        # A cancel that lost its race with an inbox read's answer takes the read back.
        lowlevel.add_notification_handler(
            "notifications/cancelled",
            CancelledNotificationParams,
            partial(inbox_cancelled, port),
        )

    def _while_connecting(
        self, result: CallToolResult | InputRequiredResult
    ) -> CallToolResult | InputRequiredResult:
        """An ``unknown-channel`` refusal given while a server is still connecting says so:
        the name may be a channel it has not registered yet."""
        refusal = _refusal_of(result) if isinstance(result, CallToolResult) else None
        if refusal is None or refusal.kind is not RefusalKind.UNKNOWN_CHANNEL:
            return result
        amended = still_connecting(refusal, self._port.server_states())
        return result if amended is refusal else refused(amended)

    async def list_tools(self) -> list[Tool]:
        return [*await super().list_tools(), *self._passthrough.tools()]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[dict[str, Any], Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        if name in self._offered:
            try:
                result = await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    return refused(argument_refusal(name, exc.__cause__))
                raise
            return self._while_connecting(result)
        if name in OWN_TOOLS:
            return refused(_not_offered(name))
        return await self._passthrough.call(name, arguments)


def _refusal_of(result: CallToolResult) -> Refusal | None:
    """The refusal an ``isError`` result carries (its ``_meta`` facts), or None."""
    facts = (result.meta or {}).get(REFUSAL_META) if result.is_error else None
    if not isinstance(facts, dict):
        return None
    try:
        kind = RefusalKind(str(facts.get("refusal")))
    except ValueError:
        return None
    data = {k: v for k, v in facts.items() if k not in ("refusal", "message", "next")}
    return Refusal(kind, str(facts.get("message", "")), str(facts.get("next", "")), **data)


def _argument_problem(error: Mapping[str, Any]) -> str:
    """One pydantic error of a tool's arguments, said in the house style (no library text,
    no link)."""
    loc = ".".join(str(part) for part in error.get("loc", ())) or "the arguments"
    kind: str = error.get("type", "")
    given = error.get("input")
    if kind == "missing":
        return f"`{loc}` is missing; it is required"
    if kind == "extra_forbidden":
        return f"`{loc}` is not an argument of this tool"
    wanted = _WANTED.get(kind.removesuffix("_parsing").removesuffix("_type"))
    if wanted is not None:
        shown = json.dumps(given) if isinstance(given, str | int | float | bool) else "that"
        return f"`{loc}` must be {wanted}, not {shown[:60]}"
    ctx = error.get("ctx") or {}
    for key, bound in (
        ("ge", "at least"),
        ("gt", "more than"),
        ("le", "at most"),
        ("lt", "less than"),
    ):
        if key in ctx:
            return f"`{loc}` must be {bound} {ctx[key]}, not {given!r}"
    for key, what in (("min_length", "at least"), ("max_length", "at most")):
        if key in ctx:
            unit = "item" if isinstance(given, list) else "character"
            count = ctx[key]
            return f"`{loc}` must have {what} {count} {unit}{'' if count == 1 else 's'}"
    if kind == "literal_error" and "expected" in ctx:
        return f"`{loc}` must be one of {ctx['expected']}, not {given!r}"
    message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    return f"`{loc}`: {message[:1].lower()}{message[1:]}"


_WANTED = {
    "string": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "list": "a list",
    "dict": "an object",
    "model": "an object",
}


def argument_refusal(tool: str, exc: ValidationError) -> Refusal:
    """The ``invalid-arguments`` refusal of a call of ``tool`` whose arguments did not match
    its input schema: every problem, one clause each; nothing ran."""
    problems = [_argument_problem(error) for error in exc.errors()]
    return Refusal(
        RefusalKind.INVALID_ARGUMENTS,
        f"{tool} did not run: {'; '.join(problems)}.",
        tool=tool,
        problems=problems,
    )


def _not_offered(name: str) -> Refusal:
    """Why one of Switchboard's own tools that this agent was not offered does nothing."""
    who = (
        "a task agent (one started with agent_spawn)"
        if name == "task_finish"
        else "an agent on a Switchboard that several agents share ([[agents]] in its config)"
    )
    return Refusal(
        RefusalKind.UNKNOWN_TOOL,
        f"{name} is not one of your tools: it is offered only to {who}; nothing was done",
        tool=name,
    )


def server_for(port: AgentPort) -> MCPServer[dict[str, Any]]:
    """An ``MCPServer`` whose tools act for the agent ``port`` serves."""
    return SwitchboardServer(port)
