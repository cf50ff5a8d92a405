"""Demo Town in-process: rooms, greeting, answers to questions, chatter, failing on purpose."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from switchboard.connectors.demo import (
    ROOMS,
    Chatter,
    DemoConnector,
    DemoOptions,
    answer_to,
    descriptors,
)
from tests.connector.hostkit import WAIT, ScriptedHost, connected

pytestmark = pytest.mark.anyio


def publish(channel_id: str, text: str) -> dict[str, Any]:
    return {"channelId": channel_id, "content": [{"type": "text", "text": text}]}


async def ready(host: ScriptedHost) -> list[dict[str, Any]]:
    await host.handshake()
    return list((await host.next("channels/register")).params["channels"])


async def test_the_town_registers_three_bidirectional_rooms_with_raw_addresses() -> None:
    async with connected(DemoConnector(DemoOptions(interval=0))) as host:
        channels = await ready(host)
    assert [(c["id"], c["label"]) for c in channels] == [
        ("demo:#general", "#general (Demo Town)"),
        ("demo:#random", "#random (Demo Town)"),
        ("demo:dm:carol", "DM: Carol"),
    ]
    assert {c["direction"] for c in channels} == {"bidirectional"}
    assert [c["address"]["channelId"] for c in channels] == ["c-100", "c-101", "c-200"]
    assert channels[2]["metadata"] == {
        "channelType": "dm",
        "recipientName": "Carol",
        "recipientId": "u-carol",
    }


async def test_hello_sends_one_greeting_from_alice_right_after_registration() -> None:
    async with connected(DemoConnector(DemoOptions(interval=0, hello=True))) as host:
        await ready(host)
        greeting = (await host.next("channels/incoming")).params["messages"]
        await host.barrier()
        assert host.pending() == []
    assert len(greeting) == 1
    assert greeting[0]["channelId"] == "demo:#general"
    assert greeting[0]["author"] == {"id": "u-alice", "name": "Alice"}
    assert greeting[0]["content"] == [{"type": "text", "text": "welcome!"}]


async def test_a_question_is_answered_in_the_same_room_quoting_the_message_id() -> None:
    demo = DemoConnector(DemoOptions(interval=0))
    async with connected(demo) as host:
        await ready(host)
        result = await host.peer.request("channels/publish", publish("demo:#random", "lunch?"))
        answer = (await host.next("channels/incoming")).params["messages"][0]
        plain = await host.peer.request("channels/publish", publish("demo:#random", "ok."))
        await host.barrier()
        assert host.pending() == []  # no question, no answer
    assert result == {"delivered": True, "messageId": "demo-m-1"}
    assert plain["messageId"] == "demo-m-2"
    assert answer["channelId"] == "demo:#random"
    assert "demo-m-1" in answer["content"][0]["text"]
    assert answer["author"]["name"] == "Bob"
    assert "chat:reply" in answer["tags"]
    assert [d.text for d in demo.deliveries] == ["lunch?", "ok."]


async def test_in_the_dm_carol_answers() -> None:
    async with connected(DemoConnector(DemoOptions(interval=0))) as host:
        await ready(host)
        await host.peer.request("channels/publish", publish("demo:dm:carol", "free later?"))
        answer = (await host.next("channels/incoming")).params["messages"][0]
    assert answer["author"] == {"id": "u-carol", "name": "Carol"}
    assert "chat:dm" in answer["tags"]


async def test_ambient_chatter_stops_after_count_lines() -> None:
    demo = DemoConnector(DemoOptions(interval=0.001, count=3, seed=1))
    async with connected(demo) as host:
        await ready(host)
        said = [(await host.next("channels/incoming")).params["messages"][0] for _ in range(3)]
        with anyio.fail_after(WAIT):
            await demo.chatter_finished.wait()
        await host.barrier()
        assert host.pending() == []
    rooms = {room.id: room for room in ROOMS}
    for message in said:
        room = rooms[message["channelId"]]
        assert "chat:from-human" in message["tags"]
        if room.dm_with is not None:
            assert message["author"]["name"] == "Carol"
    assert [m["messageId"] for m in said] == ["demo-in-1", "demo-in-2", "demo-in-3"]


def test_the_same_seed_gives_the_same_conversation_and_closed_rooms_stay_quiet() -> None:
    everywhere = [room.id for room in ROOMS]
    a, b, other = Chatter(5), Chatter(5), Chatter(6)
    first = [a.next(everywhere) for _ in range(20)]
    assert first == [b.next(everywhere) for _ in range(20)]
    assert first != [other.next(everywhere) for _ in range(20)]
    only_random = Chatter(5)
    lines = [only_random.next(["demo:#random"]) for _ in range(10)]
    assert {line.room.id for line in lines if line is not None} == {"demo:#random"}
    assert None not in lines
    assert Chatter(5).next([]) is None


def test_answers_take_turns_and_quote_the_message_id() -> None:
    general = ROOMS[0]
    names = [answer_to(general, n, f"demo-m-{n}").person.name for n in (1, 2, 3, 4)]
    assert names == ["Bob", "Alice", "Carol", "Bob"]
    assert "demo-m-7" in answer_to(general, 7, "demo-m-7").text
    assert [d.id for d in descriptors()] == [room.id for room in ROOMS]


async def test_typing_and_acknowledge_are_answered() -> None:
    async with connected(DemoConnector(DemoOptions(interval=0))) as host:
        await ready(host)
        typing = await host.peer.request("channels/typing", {"channelId": "demo:#general"})
        ack = await host.peer.request(
            "channels/acknowledge",
            {
                "channelId": "demo:#general",
                "messageId": "demo-in-1",
                "intent": "seen",
                "value": "+1",
            },
        )
    assert typing == {}
    assert ack == {"acknowledged": True, "representation": "reaction:+1"}


async def test_open_returns_recent_history_when_asked() -> None:
    async with connected(DemoConnector(DemoOptions(interval=0, hello=True))) as host:
        await ready(host)
        await host.next("channels/incoming")
        await host.barrier()
        opened = await host.peer.request(
            "channels/open", {"channelId": "demo:#general", "history": {"limit": 5}}
        )
    assert opened["channel"]["id"] == "demo:#general"
    assert [m["messageId"] for m in opened["history"]] == ["demo-in-1"]
    assert opened["historyTruncated"] is False


async def test_fail_after_stops_with_exit_code_3_once_the_last_answer_is_out() -> None:
    demo = DemoConnector(DemoOptions(interval=0, fail_after=2))
    async with connected(demo) as host:
        await ready(host)
        await host.peer.request("channels/publish", publish("demo:#general", "one"))
        assert not host.connector_done.is_set()
        last = await host.peer.request("channels/publish", publish("demo:#general", "two"))
        with anyio.fail_after(WAIT):
            await host.connector_done.wait()
    assert last == {"delivered": True, "messageId": "demo-m-2"}
    assert demo.exit_code == 3


async def test_without_the_register_grant_the_town_stays_quiet() -> None:
    demo = DemoConnector(DemoOptions(interval=0, hello=True))
    async with connected(demo) as host:
        await host.handshake(["channels.publish"])
        with anyio.fail_after(WAIT):
            await demo.wait_ready()
        await host.barrier()
        assert host.pending() == []


def test_a_room_says_every_line_once_before_any_line_again() -> None:
    chatter = Chatter(5)
    dm = [chatter.next(["demo:dm:carol"]) for _ in range(6)]
    texts = [line.text for line in dm if line is not None]
    assert len(set(texts[:3])) == 3
    assert set(texts[3:]) == set(texts[:3])
