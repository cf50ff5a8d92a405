"""Desired lifecycle state: the decision vocabulary and its events, the overwrite rules, speech
into closed channels, and reconciliation plans (channel-registry.md §5, §8.3).
"""
