"""End to end, the hot ``channels/incoming`` path (issue #14): a connector's batch is answered
per message, and the accepted messages are stored as the bytes the connector wrote.

The test writes raw frames on the connector's end of an in-memory link, so the spacing, key
order and unknown members of each message are the connector's own, then reads the batch rows
of the store's file.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from switchboard.app.board import Switchboard
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.store import StoredMessage
from switchboard.store.sqlite import MessageStore
from switchboard.transport import MemoryLink, memory_link_pair
from tests.fake import ALL_CHANNELS, descriptor

__all__: list[str] = []

pytestmark = pytest.mark.anyio

NOT_REGISTERED = "unknown channel: not registered by this connection"
OUTBOUND_ONLY = "channel is outbound-only and receives nothing"


async def answer_to(far: MemoryLink, request_id: object) -> dict[str, Any]:
    """The host's answer to our request ``request_id`` (notifications skipped)."""
    while True:
        frame: dict[str, Any] = orjson.loads(await far.receive())
        if "method" in frame and "id" not in frame:
            continue
        assert "method" not in frame, f"unexpected request from the host: {frame}"
        if frame.get("id") == request_id:
            return frame


async def exchange(
    far: MemoryLink, store: MessageStore, frame: bytes, request_id: object
) -> tuple[dict[str, Any], list[StoredMessage]]:
    """Send ``frame``, wait for the answer to ``request_id``, then read what the store holds."""
    with anyio.fail_after(10):
        await far.send(frame)
        answer = await answer_to(far, request_id)
        stored = await store.read(0)
    return answer, stored


@asynccontextmanager
async def ready_connector(
    tmp_path: Path,
    descriptors: tuple[dict[str, Any], ...] = (descriptor("room"),),
    patterns: list[str] | None = None,
) -> AsyncIterator[tuple[MemoryLink, MessageStore]]:
    """A Switchboard serving connector ``s1`` over a memory link whose far end the test
    writes raw frames on; handshake done and ``descriptors`` (channel ``room``) registered,
    with the config's ``channels`` patterns when given."""
    path = tmp_path / "host.sqlite"
    store = await MessageStore.open(path)
    cc = ConnectorConfig(id="s1", command=["unused"], channels=patterns)
    board = Switchboard(Config(connectors=[cc], store=StoreConfig(path=str(path))), store)
    host_link, far = memory_link_pair()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                init = orjson.loads(await far.receive())
                mcpl = {"version": "0.5", "channels": dict(ALL_CHANNELS)}
                result = {
                    "protocolVersion": init["params"]["protocolVersion"],
                    "serverInfo": {"name": "raw", "version": "0"},
                    "capabilities": {"experimental": {"mcpl": mcpl}},
                }
                await far.send(orjson.dumps({"jsonrpc": "2.0", "id": init["id"], "result": result}))
                policy: dict[str, Any] = {}
                while policy.get("method") != "featureSets/update":
                    policy = orjson.loads(await far.receive())
                receipt = {"jsonrpc": "2.0", "id": policy["id"], "result": {"accepted": True}}
                await far.send(orjson.dumps(receipt))
                register = {
                    "jsonrpc": "2.0",
                    "id": "r1",
                    "method": "channels/register",
                    "params": {"channels": list(descriptors)},
                }
                await far.send(orjson.dumps(register))
                registered = await answer_to(far, "r1")
                assert [r["id"] for r in registered["result"]["results"]] == [
                    d["id"] for d in descriptors
                ]
            yield far, store
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()


def written(cid: str, mid: str, text: str) -> bytes:
    """A message as a connector might write it: its own member order and spacing, and a
    member MCPL does not define."""
    return (
        b'{ "x-trace" : {"span": [1, 2.50, null], "k": "v"},\n'
        b'  "timestamp":"2026-11-29T12:00:00Z", "author" : {"name":"Ann","id":"u1"},\n'
        b'  "content":[ {"text": "' + text.encode() + b'", "type": "text"} ],\n'
        b'  "messageId": "' + mid.encode() + b'", "channelId" : "' + cid.encode() + b'" }'
    )


def stored_bodies(path: Path) -> list[bytes]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT body FROM batches ORDER BY first_seq").fetchall()
    conn.close()
    bodies = [bytes(body) for (body,) in rows]
    return [zlib.decompress(b) if b[:1] == b"\x78" else b for b in bodies]


async def test_a_batch_is_answered_per_message_and_stored_as_the_connector_wrote_it(
    tmp_path: Path,
) -> None:
    first = written("room", "m1", "hello")
    stray = written("never", "m2", "lost")
    last = written("room", "m3", "caf\xe9 \U0001f600")
    frame = (
        b'{"jsonrpc":"2.0","id":41,"method":"channels/incoming","params":{"messages":[\n'
        + b" ,\n".join([first, stray, last])
        + b"\n]}}"
    )
    async with ready_connector(tmp_path) as (far, store):
        answer, stored = await exchange(far, store, frame, 41)
    assert answer["result"]["results"] == [
        {"messageId": "m1", "accepted": True},
        {"messageId": "m2", "accepted": False, "reason": NOT_REGISTERED},
        {"messageId": "m3", "accepted": True},
    ]
    assert [(m.seq, m.channel_id, m.message_id) for m in stored] == [
        (1, "room", "m1"),
        (2, "room", "m3"),
    ]
    assert stored[1].content == [{"type": "text", "text": "caf\xe9 \U0001f600"}]
    assert stored_bodies(tmp_path / "host.sqlite") == [b"[" + first + b"," + last + b"]"]


async def test_a_batch_sent_again_is_accepted_again_and_stored_once(tmp_path: Path) -> None:
    message = written("room", "m1", "hello")
    frame = b'{"jsonrpc":"2.0","id":ID,"method":"channels/incoming","params":{"messages":[M]}}'
    frame = frame.replace(b"M", message)
    async with ready_connector(tmp_path) as (far, store):
        with anyio.fail_after(10):
            answers = []
            for request_id in (1, 2):
                await far.send(frame.replace(b"ID", str(request_id).encode()))
                answers.append(await answer_to(far, request_id))
            count = await store.count()
    for answer in answers:
        assert answer["result"]["results"] == [{"messageId": "m1", "accepted": True}]
    assert count == 1
    assert stored_bodies(tmp_path / "host.sqlite") == [b"[" + message + b"]"]


async def test_a_batch_with_an_image_takes_the_general_path_and_is_stored_all_the_same(
    tmp_path: Path,
) -> None:
    text = written("room", "m1", "hello")
    image = {
        "channelId": "room",
        "messageId": "m2",
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "image", "uri": "https://example.invalid/x.png"}],
        "x-trace": 1,
    }
    frame = (
        b'{"jsonrpc":"2.0","id":"b","method":"channels/incoming","params":{"messages":['
        + text
        + b","
        + orjson.dumps(image)
        + b"]}}"
    )
    async with ready_connector(tmp_path) as (far, store):
        answer, stored = await exchange(far, store, frame, "b")
    assert answer["result"]["results"] == [
        {"messageId": "m1", "accepted": True},
        {"messageId": "m2", "accepted": True},
    ]
    assert [m.message_id for m in stored] == ["m1", "m2"]
    (body,) = stored_bodies(tmp_path / "host.sqlite")
    assert orjson.loads(body) == [orjson.loads(text), image]


async def test_an_all_accepted_batch_is_answered_with_each_message_id_as_the_connector_sent_it(
    tmp_path: Path,
) -> None:
    # The answer of an all-accepted batch is written once from the encoded ids; ids with a
    # quote, a comma, a backslash or a control take the dicts instead (the same answer).
    batches = [
        ["m1", "m2", "m3"],
        ['a","accepted":false,"x":"', "b"],
        ["comma,one", "two"],
        ["back\\slash", 'quo"te', "new\nline"],
        ["caf\xe9", "\U0001f4ac", "plain"],
    ]
    async with ready_connector(tmp_path) as (far, store):
        with anyio.fail_after(10):
            answers = []
            for request_id, ids in enumerate(batches):
                messages = [
                    {
                        "channelId": "room",
                        "messageId": mid,
                        "author": {"id": "u1", "name": "Ann"},
                        "timestamp": "2026-12-02T12:00:00Z",
                        "content": [{"type": "text", "text": "hi"}],
                    }
                    for mid in ids
                ]
                request = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "channels/incoming",
                    "params": {"messages": messages},
                }
                await far.send(orjson.dumps(request))
                answers.append(await answer_to(far, request_id))
            stored = await store.read(0)
    for ids, answer in zip(batches, answers, strict=True):
        assert answer["result"]["results"] == [{"messageId": m, "accepted": True} for m in ids]
    assert [m.message_id for m in stored] == [mid for ids in batches for mid in ids]


@pytest.mark.parametrize("patterns", [None, ["room", "notices"]])
async def test_each_channel_of_a_batch_is_judged_and_only_its_refused_messages_are_refused(
    tmp_path: Path, patterns: list[str] | None
) -> None:
    # An outbound-only channel and an unknown one among admitted messages, with and without
    # the config's channel patterns (the permits the host asks).
    batch = [
        written("room", "m1", "one"),
        written("notices", "m2", "no"),
        written("room", "m3", "two"),
        written("never", "m4", "lost"),
    ]
    frame = (
        b'{"jsonrpc":"2.0","id":7,"method":"channels/incoming","params":{"messages":['
        + b",".join(batch)
        + b"]}}"
    )
    channels = (descriptor("room"), descriptor("notices", "outbound"))
    async with ready_connector(tmp_path, channels, patterns) as (far, store):
        answer, stored = await exchange(far, store, frame, 7)
    assert answer["result"]["results"] == [
        {"messageId": "m1", "accepted": True},
        {"messageId": "m2", "accepted": False, "reason": OUTBOUND_ONLY},
        {"messageId": "m3", "accepted": True},
        {"messageId": "m4", "accepted": False, "reason": NOT_REGISTERED},
    ]
    assert [m.message_id for m in stored] == ["m1", "m3"]
