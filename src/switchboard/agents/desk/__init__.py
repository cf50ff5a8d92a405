"""switchboard.agents.desk: one agent's state: turns, locus, own channels, the default channel."""
