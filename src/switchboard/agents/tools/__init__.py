"""switchboard.agents.tools: the agent-facing tools and the MCP server that carries them.

The tools reach the host only through its port (:class:`switchboard.agents.port.AgentPort`):
:func:`server_for` serves one port, :func:`build_server` makes the port of one agent first.
"""

from switchboard.agents.tools.server import build_server, server_for

__all__ = ["build_server", "server_for"]
