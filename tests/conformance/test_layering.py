"""ARCHITECTURE.md §2: the conformance kit imports only protocol and transport of switchboard.

It is an independent reading of the spec; sharing the host's or the registry's code would
hide their mistakes.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

import switchboard.conformance as conformance

PACKAGE_DIR: Final = Path(conformance.__file__).resolve().parent
ALLOWED: Final = ("switchboard.protocol", "switchboard.transport", "switchboard.conformance")
MODULES: Final = sorted(PACKAGE_DIR.rglob("*.py"))


def _package_of(path: Path) -> str:
    return ".".join(["switchboard", "conformance", *path.relative_to(PACKAGE_DIR).parent.parts])


def _imported_switchboard_modules(source: str, package: str) -> list[str]:
    """Every switchboard module ``source`` imports, relative imports resolved from ``package``."""
    parts = package.split(".")
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                if node.module:
                    found.append(f"{base}.{node.module}")
                else:
                    found.extend(f"{base}.{alias.name}" for alias in node.names)
            else:
                found.append(node.module or "")
    return [name for name in found if name == "switchboard" or name.startswith("switchboard.")]


def _allowed(module: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in ALLOWED)


def test_the_scan_finds_the_package_modules() -> None:
    assert PACKAGE_DIR / "catalogue.py" in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_conformance_modules_import_only_protocol_and_transport(path: Path) -> None:
    imported = _imported_switchboard_modules(path.read_text(encoding="utf-8"), _package_of(path))
    assert [name for name in imported if not _allowed(name)] == []


def test_the_scan_catches_host_channels_and_relative_escapes() -> None:
    source = (
        "import switchboard.host\n"
        "from switchboard.channels import registry\n"
        "from .. import store, protocol\n"
        "from ..host.session import ConnectorSession\n"
        "from ..protocol import digest\n"
        "from . import catalogue\n"
        "import switchboard.transport.link\n"
    )
    imported = _imported_switchboard_modules(source, "switchboard.conformance")
    assert [name for name in imported if not _allowed(name)] == [
        "switchboard.host",
        "switchboard.channels",
        "switchboard.store",
        "switchboard.host.session",
    ]
