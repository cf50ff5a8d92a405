"""The package's public surface and its place at the bottom of the layer table."""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

import switchboard.protocol as protocol
import switchboard.transport as transport

PACKAGE_DIR = Path(protocol.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module_name", MODULES)
def test_every_module_declares_its_public_names_and_they_exist(module_name: str) -> None:
    module = importlib.import_module(f"switchboard.protocol.{module_name}")
    assert module.__doc__
    names = module.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(module, name), name


@pytest.mark.parametrize("module_name", MODULES)
def test_the_package_re_exports_every_public_name(module_name: str) -> None:
    module = importlib.import_module(f"switchboard.protocol.{module_name}")
    for name in module.__all__:
        if module_name == "wire" and name in {"describe_errors", "validate_batch", "JsonObject"}:
            continue  # internal helpers shared by the model modules
        assert name in protocol.__all__, name
        assert getattr(protocol, name) is getattr(module, name)


def test_the_package_exports_the_names_other_slices_rely_on() -> None:
    expected = {
        "ErrorCode", "McplError", "CapabilityDenied", "FeatureSetNotEnabled",
        "UnknownFeatureSet", "ChannelNotPermitted", "UnknownChannel", "ChannelOpenFailed",
        "CAPABILITY_PATHS", "METHOD_GATES", "path_matches", "advertised_paths", "Grant",
        "effective_grant", "validate_path_charset", "FeatureSetDecl", "parse_feature_sets",
        "derive_enabled", "Manifest", "parse_manifest", "host_advertisement", "MCPL_VERSION",
        "MCP_PROTOCOL_VERSION", "ContentBlock", "ChannelDescriptor", "RegisterParams",
        "validate_descriptors", "DescriptorProblem", "RegisterResult", "ItemResult",
        "ChangedParams", "ListResult", "OpenParams", "OpenResult", "CloseParams",
        "CloseResult", "PublishParams", "PublishResult", "IncomingMessage", "IncomingParams",
        "validate_incoming", "MessageProblem", "IncomingResult", "TypingParams",
        "AcknowledgeParams", "AcknowledgeResult", "PushEventParams", "PushEventResult",
        "FeatureSetsUpdateParams", "Receipt", "parse_receipt", "OutgoingChunkParams",
        "OutgoingCompleteParams", "dump",
    }  # fmt: skip
    assert expected <= set(protocol.__all__)


def test_protocol_may_import_only_the_errors_module_of_transport() -> None:
    """The protocol-no-io contract names every transport module but ``errors``: a transport
    module added without being listed there fails here."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    contracts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (no_io,) = [c for c in contracts["contracts"] if c["id"] == "protocol-no-io"]
    forbidden = {name for name in no_io["forbidden_modules"] if name.startswith("switchboard.")}
    modules = {
        f"switchboard.transport.{info.name}" for info in pkgutil.iter_modules(transport.__path__)
    }
    assert modules - {"switchboard.transport.errors"} <= forbidden
    assert "switchboard.transport.errors" not in forbidden
