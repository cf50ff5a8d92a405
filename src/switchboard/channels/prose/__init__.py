"""The ``>>`` prose grammar: segments, the per-agent modes, the streaming router and kept drafts
(channel-registry.md §4).
"""
