"""switchboard.agents.presence: what an agent shows while it works: typing, and context hooks."""
