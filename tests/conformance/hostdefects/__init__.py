"""Hosts for the host suite: Switchboard as a reference, and planted-defect hosts.

Run one as ``python -m tests.conformance.hostdefects.<name> CONNECTOR-ARGV...`` from the
repository root (the kit's ``{connector}`` argv follows the module name). The defects are
raw asyncio programs on :mod:`.rawhost`, each with one rule broken on purpose;
``tests/conformance/test_host_suite.py`` asserts the exact set of checks each one fails.
"""
