"""switchboard.agents.inbox: what comes to an agent: routing, mail, the inbox read and its
delivery."""
