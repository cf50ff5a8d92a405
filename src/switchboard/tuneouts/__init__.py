"""Tune-outs on the host: durable records, expiry, diversion from the inbox and owed backlogs."""
