"""The host's desired lifecycle state: the durable decision journal, the verbs, per-channel queues,
reconciliation and speech into closed channels.
"""
