"""What the host keeps and does for one agent: its desk (turns, locus), the default channel,
publishing, speech, streams, typing, context hooks and channel views; and its port
(:mod:`.port`), the implementation of :class:`switchboard.host.AgentPort` the tools go through.
"""
