"""Each layer raises exceptions of one tree: every exception class it defines has its root.

The roots: ``TransportError`` (the wire), ``ProtocolError`` (MCPL; ``McplError`` is also a
transport ``RpcError``), ``ChannelsError`` (the channels core and the pure rules of lifecycle and
tune-outs), ``StoreError``, ``DirectoryError``, ``ConfigError``, ``HostError`` (every package of
the host: app, agents, connections, lifecycle, tune-outs, events, refusals, the status model),
and for the connector SDK ``ConnectorError`` and for the conformance kit ``KitError``. The walk
imports every module of a package and looks at the exception classes defined there, so a new
module's exception cannot slip past; a module takes the root of the longest package named.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from switchboard.channels import ChannelsError
from switchboard.config import ConfigError
from switchboard.conformance.common.errors import KitError
from switchboard.connector import ConnectorError
from switchboard.directory import DirectoryError
from switchboard.protocol import McplError, ProtocolError
from switchboard.refusals import HostError
from switchboard.store import StoreError
from switchboard.transport import RpcError, TransportError

ROOTS: dict[str, type[Exception]] = {
    "switchboard.transport": TransportError,
    "switchboard.protocol": ProtocolError,
    "switchboard.channels": ChannelsError,
    "switchboard.store": StoreError,
    "switchboard.directory": DirectoryError,
    "switchboard.config": ConfigError,
    "switchboard.app": HostError,
    "switchboard.agents": HostError,
    "switchboard.connections": HostError,
    "switchboard.lifecycle": HostError,
    "switchboard.lifecycle.rules": ChannelsError,
    "switchboard.tuneouts": HostError,
    "switchboard.tuneouts.rules": ChannelsError,
    "switchboard.events": HostError,
    "switchboard.refusals": HostError,
    "switchboard.status.model": HostError,
    "switchboard.connector": ConnectorError,
    "switchboard.conformance": KitError,
}


def _modules(package_name: str) -> list[ModuleType]:
    package = importlib.import_module(package_name)
    found = [package]
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), f"{package_name}."):
        found.append(importlib.import_module(info.name))
    return found


def _root_package(module_name: str) -> str | None:
    named = [p for p in ROOTS if module_name == p or module_name.startswith(p + ".")]
    return max(named, key=len) if named else None


def _exceptions_defined_in(package_name: str) -> set[type[BaseException]]:
    """The exception classes of the modules of ``package_name`` whose root is its own."""
    return {
        value
        for module in _modules(package_name)
        if _root_package(module.__name__) == package_name
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
    }


def test_the_walk_finds_the_exceptions_of_nested_concept_folders() -> None:
    names = {cls.__name__ for cls in _exceptions_defined_in("switchboard.channels")}
    assert {"ChannelsError", "ChannelNameError", "NoUnsentDraft"} <= names
    assert {c.__name__ for c in _exceptions_defined_in("switchboard.lifecycle.rules")} == {
        "DecodeError"
    }
    names = {cls.__name__ for cls in _exceptions_defined_in("switchboard.lifecycle")}
    assert {"LifecycleError", "DecisionNotRecorded"} <= names
    assert "LinkConfigError" in {
        c.__name__ for c in _exceptions_defined_in("switchboard.connections")
    }


@pytest.mark.parametrize("package_name", sorted(ROOTS))
def test_every_exception_a_layer_defines_derives_from_the_layer_root(package_name: str) -> None:
    root = ROOTS[package_name]
    strays = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _exceptions_defined_in(package_name)
        if not issubclass(cls, root)
    )
    assert strays == [], f"not under {root.__name__}"


def test_the_mcpl_errors_are_wire_errors_of_the_transport_family() -> None:
    assert issubclass(McplError, RpcError)
    assert issubclass(McplError, ProtocolError)
