"""Grants real connectors can live with, and nothing refused in silence (issue #10, 1 and 4).

Each test drives a Switchboard over a memory link with a scripted connector (tests/fake.py)
and reads what the host logged and counted.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.config import DEFAULT_GRANT
from switchboard.connections.session import SessionState
from switchboard.transport import RequestTimeoutError, RpcError
from tests.fake import ALL_CHANNELS, FakeConnector, board_with, descriptor, message

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]


def _chat_connector_04() -> FakeConnector:
    """A 0.4 chat connector whose every feature set lists ``tools`` (peers.md §2's shape)."""
    fake = FakeConnector(
        mcpl={
            "version": "0.4",
            "pushEvents": True,
            "channels": True,
            "featureSets": [
                {
                    "name": "chat.messaging",
                    "uses": [
                        "tools",
                        "channels.publish",
                        "pushEvents",
                        "channels.incoming",
                        "channels.register",
                        "channels.lifecycle",
                        "channels.typing",
                    ],
                },
                {"name": "chat.history", "uses": ["tools"]},
            ],
        }
    )

    async def initialize(method: str, params: Any) -> Any:
        return {
            "protocolVersion": params["protocolVersion"],
            "serverInfo": {"name": "chat", "version": "0"},
            "capabilities": {"tools": {}, "experimental": {"mcpl": fake.mcpl}},
        }

    fake.extra["initialize"] = initialize
    return fake


def _events(logs: Logs, name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


async def test_the_default_grant_enables_every_set_of_a_chat_connector_that_lists_tools(
    tmp_path: Path, logs: Logs
) -> None:
    fake = _chat_connector_04()
    async with board_with(tmp_path, fake) as board:
        session = board.sessions["s1"]
        (policy,) = fake.got("featureSets/update")
        assert session.enabled_feature_sets == {"chat.messaging", "chat.history"}
        assert session.disabled_feature_sets == ()
    assert "tools" in DEFAULT_GRANT
    assert "tools" in policy["effectiveCapabilities"]
    assert policy["disabled"] == []
    assert _events(logs, "feature_set_disabled") == []


async def test_a_set_the_grant_leaves_off_is_warned_about_with_the_grant_line_that_enables_it(
    tmp_path: Path, logs: Logs
) -> None:
    fake = _chat_connector_04()
    async with board_with(tmp_path, fake, grant=["channels.*", "pushEvents"]) as board:
        disabled = board.sessions["s1"].disabled_feature_sets
    assert [(d.name, d.reason, d.missing) for d in disabled] == [
        ("chat.messaging", "capability_denied", ("tools",)),
        ("chat.history", "capability_denied", ("tools",)),
    ]
    warnings = _events(logs, "feature_set_disabled")
    assert [w["feature_set"] for w in warnings] == ["chat.messaging", "chat.history"]
    for w in warnings:
        assert w["log_level"] == "warning"
        assert w["missing"] == ["tools"]
        assert w["enable_with"] == 'grant = ["channels.*", "pushEvents", "tools"]'


def _inference_connector() -> FakeConnector:
    return FakeConnector(
        mcpl={
            "version": "0.5",
            "pushEvents": True,
            "inferenceRequest": True,
            "inferenceLifecycle": True,
            "modelInfo": True,
            "channels": dict(ALL_CHANNELS),
            "featureSets": {
                "toy": {"description": "d", "uses": ["pushEvents", "inferenceRequest"]},
                "beats": {"description": "d", "uses": ["pushEvents"]},
            },
        }
    )


async def test_a_wildcard_grants_the_inference_leaves_when_an_agent_could_answer(
    tmp_path: Path, logs: Logs
) -> None:
    """H-18, H-17: granted, and model/info is answered with an error while no model is known."""
    fake = _inference_connector()
    async with board_with(tmp_path, fake, grant=["*", "channels.*"]) as board:
        (policy,) = fake.got("featureSets/update")
        assert board.sessions["s1"].disabled_feature_sets == ()
        with pytest.raises(RpcError) as caught:
            await fake.call("model/info", {})
    granted = set(policy["effectiveCapabilities"])
    assert {"inferenceRequest", "inferenceLifecycle", "modelInfo"} <= granted
    assert policy["enabled"] == ["beats", "toy"]
    assert caught.value.code == -32603
    assert caught.value.data["reason"] == "model-unknown"
    assert "@agent" in caught.value.message
    assert _events(logs, "feature_set_disabled") == []


async def test_with_no_agent_to_answer_the_inference_leaves_are_never_granted_and_why_is_said(
    tmp_path: Path, logs: Logs
) -> None:
    """A ``*`` matches inferenceRequest, modelInfo and inferenceLifecycle; with no agent to
    answer none is granted, and a set that needs one is reported with why no grant line
    enables it (H-18: model/info then gets -32002)."""
    fake = _inference_connector()

    def no_agents(board: Any) -> None:
        board.roster.remove("agent")

    async with board_with(tmp_path, fake, grant=["*", "channels.*"], prepare=no_agents) as board:
        (policy,) = fake.got("featureSets/update")
        (toy,) = board.sessions["s1"].disabled_feature_sets
        with pytest.raises(RpcError) as caught:
            await fake.call("model/info", {})
    granted = set(policy["effectiveCapabilities"])
    assert granted.isdisjoint({"inferenceRequest", "inferenceLifecycle", "modelInfo"})
    assert "pushEvents" in granted
    assert policy["enabled"] == ["beats"]
    assert toy.name == "toy"
    assert toy.missing == ("inferenceRequest",)
    assert toy.enable_with is None
    assert toy.why_not is not None
    assert "no agent owns default delivery" in toy.why_not
    assert "inference_agent" in toy.why_not
    assert caught.value.code == -32002
    assert caught.value.data == {"capability": "modelInfo"}
    (warning,) = _events(logs, "feature_set_disabled")
    assert "no agent owns default delivery" in warning["why_not"]


async def test_a_set_left_out_of_enabled_feature_sets_is_noted_at_info_with_the_selection_line(
    tmp_path: Path, logs: Logs
) -> None:
    fake = _chat_connector_04()
    async with board_with(tmp_path, fake, enabled_feature_sets=["chat.messaging"]) as board:
        (history,) = board.sessions["s1"].disabled_feature_sets
    assert history.reason == "not_selected"
    assert history.enable_with == 'enabled_feature_sets = ["chat.messaging", "chat.history"]'
    (note,) = _events(logs, "feature_set_not_selected")
    assert note["log_level"] == "info"
    assert _events(logs, "feature_set_disabled") == []


async def test_repeated_capability_denials_are_logged_once_and_all_counted(
    tmp_path: Path, logs: Logs
) -> None:
    """H-11 (§5.4): a grant without channels.register (a bare parent like ``channels`` is
    refused at load, so pushEvents alone here); each -32002 is counted, the log is not
    flooded."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake, grant=["pushEvents"]) as board:
        for _ in range(5):
            with pytest.raises(RpcError) as caught:
                await fake.call("channels/register", {"channels": [descriptor("room")]})
            assert caught.value.code == -32002
        stats = board.sessions["s1"].statistics()
        lines = _events(logs, "connector_refused")
    assert stats.capability_denied == 5
    assert stats.total == 5
    (row,) = stats.by_reason
    assert (row.kind, row.method, row.count) == ("capability_denied", "channels/register", 5)
    assert len(lines) == 1
    assert lines[0]["log_level"] == "warning"
    assert lines[0]["capability"] == "channels.register"
    assert lines[0]["code"] == -32002


async def test_a_summary_with_the_count_is_written_when_the_connection_ends(
    tmp_path: Path, logs: Logs
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake, grant=["pushEvents"]) as board:
        session = board.sessions["s1"]
        for _ in range(3):
            with pytest.raises(RpcError):
                await fake.call("channels/register", {"channels": [descriptor("room")]})
        assert fake.peer is not None
        await fake.peer.aclose()
        with anyio.fail_after(5):
            while session.state is not SessionState.CLOSED:
                await anyio.lowlevel.checkpoint()
    first, summary = _events(logs, "connector_refused")
    assert (first["count"], first["total"]) == (1, 1)
    assert (summary["count"], summary["total"], summary["repeated"]) == (2, 3, True)


async def test_refused_messages_rejected_descriptors_and_refused_pushes_are_each_counted(
    tmp_path: Path, logs: Logs
) -> None:
    fake = FakeConnector(
        mcpl={
            "version": "0.5",
            "pushEvents": True,
            "channels": dict(ALL_CHANNELS),
            "featureSets": {"beats": {"description": "d", "uses": ["pushEvents"]}},
        }
    )
    push = {
        "featureSet": "nope",
        "eventId": "e1",
        "timestamp": "2026-11-29T12:00:00Z",
        "payload": {"content": [{"type": "text", "text": "tick"}]},
    }
    async with board_with(tmp_path, fake, channels=["ok-*"]) as board:
        registered = await fake.call(
            "channels/register", {"channels": [descriptor("ok-1"), descriptor("elsewhere")]}
        )
        answer = await fake.call(
            "channels/incoming",
            {"messages": [message("ok-1", "m1"), message("ghost", "m2"), message("ghost", "m3")]},
        )
        with pytest.raises(RpcError) as refused_push:
            await fake.call("push/event", push)
        stats = board.sessions["s1"].statistics()
    assert [r["accepted"] for r in registered["results"]] == [True, False]
    assert [r["accepted"] for r in answer["results"]] == [True, False, False]
    assert refused_push.value.code == -32003
    assert (stats.descriptors_rejected, stats.incoming_refused, stats.pushes_refused) == (1, 2, 1)
    lines = {e["kind"]: e for e in _events(logs, "connector_refused")}
    assert lines["descriptor_rejected"]["channel_id"] == "elsewhere"
    assert lines["incoming_refused"]["count"] == 2
    assert lines["incoming_refused"]["reason"].startswith("unknown channel")
    assert lines["push_refused"]["featureSet"] == "nope"


async def test_a_connector_that_never_sends_its_receipt_is_reported_with_what_is_awaited(
    tmp_path: Path, logs: Logs
) -> None:
    fake = FakeConnector()
    never = anyio.Event()

    async def hold_the_receipt(method: str, params: Any) -> Any:
        await never.wait()
        return {"accepted": True}

    fake.extra["featureSets/update"] = hold_the_receipt
    with anyio.fail_after(10), pytest.raises(BaseExceptionGroup) as ended:
        async with board_with(tmp_path, fake, request_timeout=0.2):
            pass  # never reached: the handshake times out first
    assert ended.group_contains(RequestTimeoutError)
    reports = _events(logs, "connector_stuck_connecting") + _events(logs, "handshake_timed_out")
    assert reports
    assert {r["waiting_for"] for r in reports} == {"the featureSets/update receipt"}
    assert all(r["log_level"] == "warning" for r in reports)
