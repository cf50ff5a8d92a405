"""switchboard.agents.port: the one port the agent-facing tools use."""
