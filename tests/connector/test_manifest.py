"""The connector's manifest: what it advertises, and the mistakes refused at build time."""

from __future__ import annotations

import pytest

from switchboard.connector import CHANNEL_LEAVES, Connector, FeatureSetSpec, build_manifest
from switchboard.protocol import parse_manifest


def test_channels_true_is_advertised_as_an_object_of_all_seven_leaves() -> None:
    """mcpl-protocol.md 4.1: channels is an object of boolean leaves, never one boolean."""
    manifest = build_manifest(channels=True, push_events=False, feature_sets=None, tools=False)
    mcpl = manifest.mcpl()
    assert mcpl["version"] == "0.5"
    assert mcpl["channels"] == dict.fromkeys(CHANNEL_LEAVES, True)
    assert mcpl["featureSets"] == {}
    assert manifest.advertised == {f"channels.{leaf}" for leaf in CHANNEL_LEAVES}


def test_a_channel_mapping_advertises_only_the_leaves_set_true() -> None:
    manifest = build_manifest(
        channels={"register": True, "incoming": True, "typing": False},
        push_events=True,
        feature_sets=None,
        tools=False,
    )
    assert manifest.advertised == {"channels.register", "channels.incoming", "pushEvents"}
    assert manifest.mcpl()["channels"]["publish"] is False


def test_no_channels_leaves_the_channels_member_out() -> None:
    manifest = build_manifest(channels=False, push_events=False, feature_sets=None, tools=True)
    assert "channels" not in manifest.mcpl()
    assert manifest.advertised == {"tools"}
    assert manifest.capabilities()["tools"] == {"listChanged": False}


def test_an_unknown_channel_leaf_is_refused() -> None:
    with pytest.raises(ValueError, match="observe"):
        build_manifest(
            channels={"observe": True}, push_events=False, feature_sets=None, tools=False
        )


def test_feature_sets_are_a_record_the_protocol_reader_accepts_without_diagnostics() -> None:
    """S-01: object-keyed featureSets, description present, uses from the 17 paths."""
    connector = Connector(
        "fs",
        push_events=True,
        feature_sets={
            "alerts": {"description": "Pushes alerts", "uses": ["pushEvents"]},
            "chat": FeatureSetSpec("Channels", ("channels.incoming", "channels.publish")),
        },
    )
    manifest = parse_manifest({"capabilities": connector.manifest.capabilities()})
    assert manifest is not None
    assert manifest.diagnostics == ()
    assert set(manifest.feature_sets) == {"alerts", "chat"}
    assert all(decl.valid for decl in manifest.feature_sets.values())


def test_a_feature_set_using_an_unknown_path_is_refused() -> None:
    """mcpl-protocol.md 3.7: contextHooks.beforeInference is not one of the 17 paths (A-6)."""
    with pytest.raises(ValueError, match="unknown capability paths"):
        FeatureSetSpec("bad", ("contextHooks.beforeInference",))


def test_a_feature_set_using_a_path_the_connector_does_not_advertise_is_refused() -> None:
    """S-02: uses must be accurate; pushEvents is not advertised here."""
    with pytest.raises(ValueError, match="does not advertise"):
        Connector(
            "fs", push_events=False, feature_sets={"a": {"description": "", "uses": ["pushEvents"]}}
        )


def test_a_feature_set_with_empty_uses_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        FeatureSetSpec("empty", ())


def test_each_call_returns_a_fresh_copy_of_the_manifest() -> None:
    manifest = build_manifest(channels=True, push_events=False, feature_sets=None, tools=False)
    first = manifest.mcpl()
    first["channels"]["publish"] = False
    assert manifest.mcpl()["channels"]["publish"] is True
