"""Shared pytest set-up: every async test runs on anyio's asyncio backend."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from switchboard.runtime.logs import configure


@pytest.fixture
def anyio_backend() -> str:
    """The websockets link is asyncio-only, so the whole suite runs on asyncio."""
    return "asyncio"


@pytest.fixture
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Capture structlog events down to debug (the suite otherwise filters at WARNING).

    Loggers bound before this fixture ran keep their old level, so create peers inside the
    test.
    """
    old_wrapper = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with capture_logs() as captured:
            yield captured
    finally:
        structlog.configure(wrapper_class=old_wrapper)


@pytest.fixture(autouse=True)
def _drop_suite_databases() -> Iterator[None]:
    """With ``SWITCHBOARD_TEST_BACKEND=postgres``, drop the databases the test's boards made
    (tests/helpers.py) once it ends: each is a copy of a template, so they must not pile up."""
    yield
    if os.environ.get("SWITCHBOARD_TEST_BACKEND") == "postgres":
        from tests.pg import drop_test_databases

        drop_test_databases()


configure("WARNING")
