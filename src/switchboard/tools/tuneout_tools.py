"""The tune-out tools: tune_out and its cancel (channel-registry.md §6)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from switchboard.host import AgentDesk, Switchboard


def register_tuneout_tools(mcp: MCPServer, board: Switchboard, desk: AgentDesk) -> None:
    """Add these tools for the agent ``desk`` serves to ``mcp``."""
