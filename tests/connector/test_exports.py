"""The public surface of the SDK and the demo package is explicit and importable."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "switchboard.connector",
        "switchboard.connector.connector",
        "switchboard.connector.hooks",
        "switchboard.connector.inbound",
        "switchboard.connector.policy",
        "switchboard.connector.manifest",
        "switchboard.connector.channels",
        "switchboard.connector.replies",
        "switchboard.connector.messages",
        "switchboard.connector.errors",
        "switchboard.connectors.demo",
        "switchboard.connectors.demo.script",
        "switchboard.connectors.demo.town",
    ],
)
def test_every_name_in_all_exists(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in imported.__all__ if not hasattr(imported, name)]
    assert missing == []
