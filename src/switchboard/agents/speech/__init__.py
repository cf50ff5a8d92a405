"""switchboard.agents.speech: what an agent says: publishes, ``>>`` speech and streamed speech."""
