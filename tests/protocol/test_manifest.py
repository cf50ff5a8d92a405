"""Reading the server manifest from `initialize` and the host's own advertisement."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.protocol import (
    MCP_PROTOCOL_VERSION,
    MCPL_VERSION,
    Manifest,
    advertised_paths,
    host_advertisement,
    parse_manifest,
)


def _initialize_result(mcpl: Any, **capabilities: Any) -> dict[str, Any]:
    return {
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "serverInfo": {"name": "peer", "version": "0.1.0"},
        "capabilities": {**capabilities, "experimental": {"mcpl": mcpl}},
    }


@pytest.mark.parametrize(
    "result",
    [
        {},
        {"capabilities": None},
        {"capabilities": {"tools": {}}},
        {"capabilities": {"experimental": {}}},
        {"capabilities": {"experimental": {"mcpl": True}}},
        {"capabilities": {"experimental": "mcpl"}},
    ],
)
def test_a_server_without_an_mcpl_object_is_mcp_only(result: dict[str, Any]) -> None:
    """§3.1 (mcpl-protocol.md 1.1): no experimental.mcpl means skip all MCPL behaviour."""
    assert parse_manifest(result) is None


def test_the_discord_04_manifest_is_read_with_its_quirks_noted(
    discord_advertisement: dict[str, Any],
) -> None:
    """peers.md §2: 0.4 shape, channels true, featureSets array, non-spec root rollback."""
    manifest = parse_manifest(_initialize_result(discord_advertisement, tools={}))
    assert isinstance(manifest, Manifest)
    assert manifest.version == "0.4"
    assert manifest.revision is None
    assert "channels.streaming" in manifest.advertised
    assert {"pushEvents", "tools"} <= manifest.advertised
    assert len(manifest.advertised) == 9
    assert set(manifest.feature_sets) == {
        "discord.messaging",
        "discord.channels",
        "discord.history",
        "discord.subscriptions",
    }
    notes = "\n".join(manifest.diagnostics)
    assert "rollback" in notes
    assert "array" in notes
    assert "'0.4'" in notes


def test_the_slack_05_manifest_is_read_cleanly(slack_advertisement: dict[str, Any]) -> None:
    slack_advertisement["revision"] = "sha256:" + "A" * 43
    manifest = parse_manifest(_initialize_result(slack_advertisement, tools={}))
    assert manifest is not None
    assert manifest.version == MCPL_VERSION
    assert manifest.revision == "sha256:" + "A" * 43
    assert manifest.diagnostics == ()
    assert manifest.feature_sets["slack.messaging"].valid
    assert "channels.typing" not in manifest.advertised


def test_the_manifest_keeps_a_private_copy_of_the_raw_object(
    slack_advertisement: dict[str, Any],
) -> None:
    manifest = parse_manifest(_initialize_result(slack_advertisement))
    assert manifest is not None
    slack_advertisement["channels"]["typing"] = True
    slack_advertisement["featureSets"]["slack.history"]["uses"].append("pushEvents")
    assert "typing" not in manifest.raw["channels"]
    assert manifest.raw["featureSets"]["slack.history"]["uses"] == ["tools"]
    assert manifest.feature_sets["slack.history"].raw["uses"] == ["tools"]


@pytest.mark.parametrize(
    ("version", "read_as"),
    [(0.5, "0.5"), (None, None), (["0.5"], None)],
)
def test_an_odd_version_is_tolerated_and_noted(version: Any, read_as: str | None) -> None:
    mcpl: dict[str, Any] = {"pushEvents": True}
    if version is not None:
        mcpl["version"] = version
    manifest = parse_manifest(_initialize_result(mcpl))
    assert manifest is not None
    assert manifest.version == read_as
    assert manifest.diagnostics
    assert manifest.advertised == {"pushEvents"}


def test_a_non_string_revision_is_dropped_with_a_note() -> None:
    manifest = parse_manifest(_initialize_result({"version": "0.5", "revision": 7}))
    assert manifest is not None
    assert manifest.revision is None
    assert any("revision" in d for d in manifest.diagnostics)


def test_manifests_compare_by_content() -> None:
    one = parse_manifest(_initialize_result({"version": "0.5", "pushEvents": True}))
    two = parse_manifest(_initialize_result({"version": "0.5", "pushEvents": True}))
    assert one == two
    assert one is not None
    assert hash(one) == hash(two)


def test_the_host_advertises_mcpl_05_honestly() -> None:
    """H-01, AUDIT §2.5: version 0.5, push, every channel leaf and the beforeInference hook
    (Switchboard sends it each turn), featureSets true; nothing it cannot serve."""
    adv = host_advertisement()
    assert adv["version"] == "0.5"
    assert adv["featureSets"] is True
    assert adv["contextHooks"] == {"beforeInference": True}
    assert advertised_paths(adv) == {
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
        "pushEvents",
        "channels.register",
        "channels.publish",
        "channels.incoming",
        "channels.lifecycle",
        "channels.streaming",
        "channels.acknowledge",
        "channels.typing",
    }
    assert "inferenceRequest" not in adv
    assert "inferenceLifecycle" not in adv
    assert "modelInfo" not in adv


def test_the_host_advertisement_can_leave_streaming_out() -> None:
    adv = host_advertisement(streaming=False)
    assert "channels.streaming" not in advertised_paths(adv)


def test_each_host_advertisement_is_a_fresh_object() -> None:
    first = host_advertisement()
    first["channels"]["typing"] = False
    assert host_advertisement()["channels"]["typing"] is True


def test_the_mcp_handshake_version_is_an_mcp_revision_date() -> None:
    """§3.1: MCPL never changes MCP's protocolVersion."""
    assert MCP_PROTOCOL_VERSION == "2025-06-18"
    assert MCPL_VERSION == "0.5"
