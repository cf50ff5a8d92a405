"""Fixtures for the transport tests live in tests/conftest.py (``logs``)."""
