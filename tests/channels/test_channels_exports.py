"""The public surface of switchboard.channels is explicit and importable."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import switchboard.channels

PACKAGE_DIR = Path(switchboard.channels.__file__).parent
MODULES = sorted(
    str(path.relative_to(PACKAGE_DIR).with_suffix("")).replace("/", ".")
    for path in PACKAGE_DIR.rglob("*.py")
    if path.name != "__init__.py"
)


def test_the_scan_finds_modules_in_every_concept_folder() -> None:
    assert {
        "registry",
        "names.resolve",
        "lifecycle.book",
        "prose.grammar",
        "tuneouts.epochs",
    } <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_name_a_channels_module_exports_exists(module: str) -> None:
    loaded = importlib.import_module(f"switchboard.channels.{module}")
    for name in loaded.__all__:
        assert hasattr(loaded, name), f"{module}.{name}"


def test_the_package_re_exports_the_registry_api() -> None:
    for name in switchboard.channels.__all__:
        assert hasattr(switchboard.channels, name), name
    assert {"ChannelRegistry", "ChannelRef", "AmbiguousName", "UnknownName"} <= set(
        switchboard.channels.__all__
    )
