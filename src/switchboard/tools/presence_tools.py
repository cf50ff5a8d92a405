"""The presence tools: typing and streamed speech (channel-registry.md §10)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from switchboard.host import AgentDesk, Switchboard


def register_presence_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add these tools for the agent ``desk`` serves to ``mcp``."""
