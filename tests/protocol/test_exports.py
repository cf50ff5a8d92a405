"""The package's public surface and its place at the bottom of the layer table."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import switchboard.protocol as protocol

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
