"""switchboard.tools: the agent-facing tools and the MCP server that carries them."""

from switchboard.tools.server import build_server

__all__ = ["build_server"]
