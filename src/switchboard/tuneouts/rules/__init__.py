"""Tune-out epochs and what an agent is given when one ends (channel-registry.md §5.3, §6)."""
