"""The public surface of switchboard.channels is explicit and importable."""

from __future__ import annotations

import importlib

import pytest

import switchboard.channels

MODULES = [
    "buckets",
    "decision_events",
    "decisions",
    "descriptor",
    "dm_index",
    "errors",
    "index",
    "label_history",
    "lifecycle",
    "lifecycle_reconcile",
    "lifecycle_speech",
    "names",
    "picking",
    "prose",
    "prose_drafts",
    "prose_route",
    "prose_stream",
    "records",
    "ref",
    "registry",
    "resolve",
    "selectors",
    "shown",
    "suggest",
    "tiers",
    "tuneout",
    "tuneout_delivery",
    "wording",
]


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
