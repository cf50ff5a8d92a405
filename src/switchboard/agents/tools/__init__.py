"""switchboard.agents.tools: the agent-facing tools and the MCP server that carries them.

The tools reach the agent side only through its port (:class:`switchboard.agents.port.AgentPort`):
:func:`server_for` serves one agent's port.
"""

from switchboard.agents.tools.server import server_for

__all__ = ["server_for"]
