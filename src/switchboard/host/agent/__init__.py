"""What the host keeps and does for one agent: its desk (turns, locus), the default channel,
publishing, speech, streams, typing, context hooks and channel views.
"""
