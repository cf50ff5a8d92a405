"""The lifecycle tools: channel_open, channel_close, channel_decline and tune_out."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from switchboard.host import AgentDesk, Switchboard


def register_lifecycle_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add the lifecycle tools for the agent ``desk`` serves to ``mcp``."""
