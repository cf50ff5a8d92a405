"""The public surface of the pure packages (channels and the rules of lifecycle and tune-outs)
is explicit and importable."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import switchboard.channels

PURE = ("switchboard.channels", "switchboard.lifecycle.rules", "switchboard.tuneouts.rules")


def _modules(package: str) -> list[str]:
    folder = Path(importlib.import_module(package).__file__ or "").parent
    return sorted(
        f"{package}." + str(path.relative_to(folder).with_suffix("")).replace("/", ".")
        for path in folder.rglob("*.py")
        if path.name != "__init__.py"
    )


MODULES = [module for package in PURE for module in _modules(package)]


def test_the_scan_finds_modules_in_every_concept_folder() -> None:
    assert {
        "switchboard.channels.registry",
        "switchboard.channels.names.resolve",
        "switchboard.lifecycle.rules.book",
        "switchboard.channels.prose.grammar",
        "switchboard.tuneouts.rules.epochs",
    } <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_name_a_pure_module_exports_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        assert hasattr(loaded, name), f"{module}.{name}"


def test_the_package_re_exports_the_registry_api() -> None:
    for name in switchboard.channels.__all__:
        assert hasattr(switchboard.channels, name), name
    assert {"ChannelRegistry", "ChannelRef", "AmbiguousName", "UnknownName"} <= set(
        switchboard.channels.__all__
    )
