"""The Matrix bridge as a host sees it, on a scripted host (``tests.connector.hostkit``):
``channels/open`` joins a room by alias or id and returns its history, refuses an encrypted
one (-32024) and an id that names no room (-32023); ``MATRIX_PASSWORD`` logs in once and the
kept token serves the next start. Switchboard itself only opens channels a connector
registered, so joining on open is driven here, on the wire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mautrix.api import Method
from mautrix.api import Path as ApiPath

from switchboard.connectors.matrix import MatrixBridge, load_config
from switchboard.protocol import ChannelOpenFailed, UnknownChannel
from tests.connector.hostkit import connected

from .support import bridge_env, signed_in
from .synapse import Synapse

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _bridge(env: dict[str, str]) -> MatrixBridge:
    config = load_config(env)
    return MatrixBridge(config, config.access_token)


async def test_open_joins_a_room_by_alias_with_its_history_and_refuses_what_it_cannot(
    synapse: Synapse, tmp_path: Path
) -> None:
    bot = await synapse.register(synapse.fresh_name("bot"), displayname="Bot")
    ann_user = await synapse.register(synapse.fresh_name("ann"), displayname="Ann")
    alias_name = synapse.fresh_name("square")
    async with signed_in(synapse, ann_user) as ann:
        created = await ann.api.api.request(
            Method.POST,
            ApiPath.v3.createRoom,
            {"preset": "public_chat", "name": "Town square", "room_alias_name": alias_name},
        )
        square = str(created["room_id"])
        said = [await ann.send(square, f"earlier {i}") for i in range(3)]
        secret = await ann.create_room("Secret", encrypted=True)
        await ann.api.api.request(
            Method.PUT,
            ApiPath.v3.rooms[secret].state["m.room.join_rules"][""],
            {"join_rule": "public"},
        )
        async with connected(_bridge(bridge_env(synapse, bot, tmp_path / "state"))) as host:
            await host.handshake()
            address = {"alias": f"#{alias_name}:localhost"}
            opened: dict[str, Any] = await host.peer.request(
                "channels/open",
                {"type": "matrix", "address": address, "history": {"limit": 2}},
            )
            with pytest.raises(ChannelOpenFailed) as encrypted:
                await host.peer.request("channels/open", {"channelId": secret})
            with pytest.raises(UnknownChannel):
                await host.peer.request("channels/open", {"channelId": "general"})
            joined = await ann.wait_for(
                lambda e: (
                    e.get("room_id") == square
                    and e.get("type") == "m.room.member"
                    and e.get("state_key") == bot.user_id
                    and e.get("content", {}).get("membership") == "join"
                )
            )

    assert opened["channel"]["id"] == square
    assert opened["channel"]["label"] == "Town square"
    assert opened["channel"]["metadata"]["canonicalAlias"] == f"#{alias_name}:localhost"
    assert [m["messageId"] for m in opened["history"]] == said[1:]
    assert opened["historyTruncated"] is True
    assert joined["sender"] == bot.user_id
    assert "end-to-end encrypted" in json.dumps(encrypted.value.data)


def _kept_session(state: Path) -> tuple[dict[str, Any], int]:
    path = state / "session.json"
    return json.loads(path.read_text()), path.stat().st_mode & 0o777


async def test_a_password_logs_in_once_and_the_kept_token_serves_the_next_start(
    synapse: Synapse, tmp_path: Path
) -> None:
    bot = await synapse.register(synapse.fresh_name("bot"), displayname="Bot")
    env = bridge_env(synapse, bot, tmp_path / "state")
    del env["MATRIX_ACCESS_TOKEN"]
    env["MATRIX_PASSWORD"] = bot.password
    async with signed_in(synapse, bot) as operator:
        await operator.create_room("Somewhere")  # so each start registers a channel
        devices: list[list[str]] = []
        for _ in range(2):
            async with connected(_bridge(env)) as host:
                await host.handshake()
                await host.next("channels/register")  # logged in and synced
            answer = await operator.api.api.request(Method.GET, ApiPath.v3.devices)
            devices.append(sorted(d["device_id"] for d in answer["devices"]))
    session, mode = _kept_session(tmp_path / "state")

    assert session["userId"] == bot.user_id
    assert mode == 0o600
    # The test's own registration has one device; the bridge's one login adds one, once.
    assert len(devices[0]) == 2
    assert devices[1] == devices[0]
    assert session["deviceId"] in devices[0]
