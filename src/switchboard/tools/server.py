"""The agent-facing MCP server: Switchboard's channels as tools.

Built on the MCP SDK's ``MCPServer``: typed parameters give each tool an input schema, results
are pydantic models (structured content plus an output schema), and a
:class:`~switchboard.host.refusal.Refusal` raised inside a tool becomes an ``isError`` result
at :func:`switchboard.tools.results.refusal_boundary`. One server serves one agent identity,
through that agent's :class:`~switchboard.host.AgentPort` (its inbox cursor lives in the store
and its turns on the host, behind the port).

The tools themselves are plain functions of the port, by concern:
:mod:`~switchboard.tools.channel_tools` (list, publish, inbox, speech, think),
:mod:`~switchboard.tools.lifecycle_tools` (open, close, decline),
:mod:`~switchboard.tools.tuneout_tools` (tune-outs) and :mod:`~switchboard.tools.presence_tools`
(typing, streamed speech). Each module's :class:`~switchboard.tools.toolset.ToolSet` adds them
to the server with the port bound.

What it deliberately does not know: anything of the host but its port (the host object is only
handed to :func:`~switchboard.host.agent_port`).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from switchboard import __version__
from switchboard.host import AgentPort, Switchboard, agent_port
from switchboard.tools.channel_tools import TOOLS as CHANNEL_TOOLS
from switchboard.tools.lifecycle_tools import TOOLS as LIFECYCLE_TOOLS
from switchboard.tools.presence_tools import TOOLS as PRESENCE_TOOLS
from switchboard.tools.tuneout_tools import TOOLS as TUNEOUT_TOOLS

__all__ = ["INSTRUCTIONS", "build_server", "server_for"]

INSTRUCTIONS = """\
Switchboard connects you to chat channels. Call `inbox` to read what people wrote (pass
wait_seconds to wait for new messages), `channel_list` to see the channels and the name that
picks each one, and `channel_publish` to write into a channel (or `speak`, prose whose
`>>target` lines route each part). A read that returns messages begins your next turn: replies
without a named channel go where that turn's `locus` says."""

_TOOL_SETS = (CHANNEL_TOOLS, LIFECYCLE_TOOLS, TUNEOUT_TOOLS, PRESENCE_TOOLS)
"""Every tool, in the order ``tools/list`` shows them."""


def server_for(port: AgentPort) -> MCPServer:
    """An ``MCPServer`` whose tools act for the agent ``port`` serves."""
    mcp = MCPServer(
        "switchboard",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    for tools in _TOOL_SETS:
        tools.register(mcp, port)
    return mcp


def build_server(board: Switchboard, *, agent: str) -> MCPServer:
    """An ``MCPServer`` exposing ``board`` to the agent named ``agent`` (through its port)."""
    return server_for(agent_port(board, agent))
