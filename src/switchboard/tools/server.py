"""The agent-facing MCP server: Switchboard's channels as tools.

Built on the MCP SDK's ``MCPServer``: typed parameters give each tool an input schema, results
are pydantic models (structured content plus an output schema), and a
:class:`~switchboard.host.refusal.Refusal` raised inside a tool becomes an ``isError`` result
at :func:`switchboard.tools.results.refusal_boundary`. One server serves one agent
identity (``agent``), whose inbox cursor lives in the store and whose turns live on its
:class:`~switchboard.host.AgentDesk`.

The tools themselves live by concern: :mod:`~switchboard.tools.channel_tools` (list, publish,
inbox, speech, think), :mod:`~switchboard.tools.lifecycle_tools` (open, close, decline),
:mod:`~switchboard.tools.tuneout_tools` (tune-outs) and :mod:`~switchboard.tools.presence_tools`
(typing, streamed speech).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from switchboard import __version__
from switchboard.host import Switchboard
from switchboard.tools.channel_tools import register_channel_tools
from switchboard.tools.lifecycle_tools import register_lifecycle_tools
from switchboard.tools.presence_tools import register_presence_tools
from switchboard.tools.tuneout_tools import register_tuneout_tools

INSTRUCTIONS = """\
Switchboard connects you to chat channels. Call `inbox` to read what people wrote (pass
wait_seconds to wait for new messages), `channel_list` to see the channels and the name that
picks each one, and `channel_publish` to write into a channel (or `speak`, prose whose
`>>target` lines route each part). A read that returns messages begins your next turn: replies
without a named channel go where that turn's `locus` says."""


def build_server(board: Switchboard, *, agent: str) -> MCPServer:
    """An ``MCPServer`` exposing ``board`` to the agent named ``agent``."""
    mcp = MCPServer(
        "switchboard",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    desk = board.desk(agent)
    register_channel_tools(mcp, board, desk)
    register_lifecycle_tools(mcp, board, desk)
    register_tuneout_tools(mcp, board, desk)
    register_presence_tools(mcp, board, desk)
    return mcp
