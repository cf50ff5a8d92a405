"""Planted-defect connectors: each a small program with one behaviour broken on purpose.

Run one as ``python -m tests.conformance.defects.<name>`` from the repository root. Some
are Demo Town (the bundled demo connector, built on the connector SDK) with one method
patched in their own process (:mod:`.sdk`); most are raw asyncio programs on
:mod:`.rawkit`, which start fast. :mod:`.expected` says, for each, the category and the
exact set of checks the kit must fail, and
``tests/conformance/test_server_suite_defects.py`` runs the kit against each.
"""
