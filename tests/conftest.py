"""Shared pytest set-up: every async test runs on anyio's asyncio backend."""

from __future__ import annotations

import pytest

from switchboard.logging import configure


@pytest.fixture
def anyio_backend() -> str:
    """The websockets link is asyncio-only, so the whole suite runs on asyncio."""
    return "asyncio"


configure("WARNING")
