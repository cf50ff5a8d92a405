"""switchboard.conformance."""
