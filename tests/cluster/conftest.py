"""Cluster tests' set-up: a database of their own on the shared PostgreSQL, a subject prefix
of their own on the shared NATS. A missing service fails the test: it is never skipped."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

from tests.cluster.harness import MakeCluster, cluster_maker
from tests.cluster.support import FIGURES
from tests.pg import fresh_database

NATS_URL = os.environ.get("SWITCHBOARD_TEST_NATS", "nats://127.0.0.1:4222")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database, dropped after the test."""
    with fresh_database() as url:
        yield url


@pytest.fixture
def nats_url() -> str:
    return NATS_URL


@pytest.fixture
def subject_prefix() -> str:
    """A subject prefix no other test uses."""
    return f"sbt{uuid.uuid4().hex[:10]}"


@pytest.fixture
def make_cluster(tmp_path: Path, pg_url: str, nats_url: str, subject_prefix: str) -> MakeCluster:
    """Real clusters (tests/cluster/harness.py) in this test's folder, database and prefix."""
    return cluster_maker(tmp_path, pg_url, nats_url, subject_prefix)


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    """Every figure the cluster tests measured, each on a line of its own."""
    if FIGURES:
        terminalreporter.section("cluster figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
