"""switchboard.status: the operator's status model, its HTTP surface and the live page."""
