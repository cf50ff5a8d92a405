"""Scripted connectors that reproduce real MCPL peers' wire behaviour, and their end-to-end tests.

Each connector module is a standalone program named for a behaviour (never for the peer it
resembles) and imports nothing from switchboard; ``wire`` is their shared framing and
``support`` the tests' helpers. peers.md in the design notes describes the peers; none of their
code is copied here.
"""
