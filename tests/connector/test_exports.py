"""The public surface of the SDK and the demo package is explicit and importable."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

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


def test_the_sdk_imports_only_protocol_and_transport_from_switchboard() -> None:
    """ARCHITECTURE.md §2: the connector SDK sits on protocol + transport only."""
    package = Path(importlib.import_module("switchboard.connector").__file__ or "").parent
    allowed = {"switchboard.protocol", "switchboard.transport"}
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("switchboard"):
                    assert node.module in allowed, f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("switchboard"), f"{path.name}: {alias.name}"
