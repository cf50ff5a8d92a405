"""Fixtures of the Matrix bridge's tests: one real Synapse for the session.

Synapse is installed from PyPI into a cached virtualenv of its own on first use
(:func:`~.synapse.ensure_synapse`) and started once per test session; a test that stops a
homeserver starts a private one (:func:`private_synapse`). When Synapse cannot be installed
or started the tests fail, they never skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .synapse import SYNAPSE_VERSION, Synapse, SynapseUnavailable, ensure_synapse

_installed: list[float] = []


@pytest.fixture(scope="session")
def synapse_python() -> Path:
    """The interpreter of the virtualenv that holds the pinned Synapse."""
    try:
        python, took = ensure_synapse()
    except SynapseUnavailable as exc:
        pytest.fail(f"Synapse {SYNAPSE_VERSION} could not be installed: {exc}")
    if took is not None:
        _installed.append(took)
    return python


@pytest.fixture(scope="session")
def synapse(synapse_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    """A Synapse on loopback shared by the session's tests (each registers its own users)."""
    server = Synapse(synapse_python, tmp_path_factory.mktemp("synapse"))
    try:
        server.start()
    except SynapseUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def private_synapse(synapse_python: Path, tmp_path: Path) -> Iterator[Synapse]:
    """A Synapse of this test's own, not started: for a test that stops and starts it."""
    server = Synapse(synapse_python, tmp_path / "synapse")
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how long installing Synapse took, when this run installed it."""
    for took in _installed:
        terminalreporter.write_line(f"Synapse {SYNAPSE_VERSION} installed in {took:.0f} s")
