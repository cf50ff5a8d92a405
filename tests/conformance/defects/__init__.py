"""Planted-defect connectors: each a small program with one behaviour broken on purpose.

Run one as ``python -m tests.conformance.defects.<name>`` from the repository root. Most
are Demo Town (the bundled demo connector, built on the connector SDK) with one method
patched in their own process (:mod:`.sdk`); the rest are raw asyncio programs on
:mod:`.rawkit`. ``tests/conformance/test_server_suite_defects.py`` runs the kit against each
and asserts the exact set of checks it fails.
"""
