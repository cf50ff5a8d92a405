"""switchboard.agents.roster: who the agents are, which are attached, and how long each lives."""
