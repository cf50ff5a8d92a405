"""Each layer raises exceptions of one tree: every exception class it defines has its root.

The roots: ``TransportError`` (the wire), ``ProtocolError`` (MCPL; ``McplError`` is also a
transport ``RpcError``), ``ChannelsError``, ``StoreError``, ``DirectoryError``, ``HostError``,
and for the connector SDK ``ConnectorError`` and for the conformance kit ``KitError``. The walk
imports every module of a package and looks at the exception classes defined there, so a new
module's exception cannot slip past.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from switchboard.channels import ChannelsError
from switchboard.conformance.common.errors import KitError
from switchboard.connector import ConnectorError
from switchboard.directory import DirectoryError
from switchboard.host.errors import HostError
from switchboard.protocol import McplError, ProtocolError
from switchboard.store import StoreError
from switchboard.transport import RpcError, TransportError

ROOTS: dict[str, type[Exception]] = {
    "switchboard.transport": TransportError,
    "switchboard.protocol": ProtocolError,
    "switchboard.channels": ChannelsError,
    "switchboard.store": StoreError,
    "switchboard.directory": DirectoryError,
    "switchboard.host": HostError,
    "switchboard.connector": ConnectorError,
    "switchboard.conformance": KitError,
}


def _modules(package_name: str) -> list[ModuleType]:
    package = importlib.import_module(package_name)
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
        found.append(importlib.import_module(info.name))
    return found


def _exceptions_defined_in(package_name: str) -> set[type[BaseException]]:
    return {
        value
        for module in _modules(package_name)
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
    }


def test_the_walk_finds_the_exceptions_of_nested_concept_folders() -> None:
    names = {cls.__name__ for cls in _exceptions_defined_in("switchboard.channels")}
    assert {"ChannelsError", "ChannelNameError", "DecodeError", "NoUnsentDraft"} <= names
    names = {cls.__name__ for cls in _exceptions_defined_in("switchboard.host")}
    assert {"HostError", "LifecycleError", "DecisionNotRecorded", "LinkConfigError"} <= names


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
