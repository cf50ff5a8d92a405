"""The package's public surface: everything in ``__all__`` exists and nothing is missing."""

from __future__ import annotations

import importlib
import pkgutil

import switchboard.transport as transport


def test_every_name_in_all_is_exported() -> None:
    for name in transport.__all__:
        assert hasattr(transport, name), name


def test_every_public_name_of_every_module_is_reexported_from_the_package() -> None:
    # The peer's machinery: used inside the package, not part of its surface.
    internal = {"deadlines", "messages", "outbox", "pending"}
    for info in pkgutil.iter_modules(transport.__path__):
        if info.name in internal:
            continue
        module = importlib.import_module(f"switchboard.transport.{info.name}")
        missing = set(module.__all__) - set(transport.__all__)
        assert not missing, (info.name, missing)
