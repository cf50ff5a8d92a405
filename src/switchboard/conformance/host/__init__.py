"""The host suite's parts: the kit playing a connector against a host under test.

Importing :mod:`switchboard.conformance.host_suite` imports every check module here.
"""
