"""Switchboard: an MCPL host that lets LLM agents live in chat.

Connectors (MCPL servers) come in over :mod:`switchboard.transport`; their channels live in
:mod:`switchboard.channels`; incoming messages are kept in :mod:`switchboard.store`; agents
reach all of it through the MCP tools in :mod:`switchboard.agents.tools`.
"""

__version__ = "0.1.0"
