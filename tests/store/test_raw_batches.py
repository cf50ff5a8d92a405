"""A batch kept as the connector's bytes (issue #14) is stored as those bytes and reads back.

The hot ``channels/incoming`` path hands the store each accepted message's own bytes
(:class:`RawMessages`); the store writes them joined, as they came (unknown members, key order
and spacing kept), and keeps only the new ones when some were stored before.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

import orjson
import pytest

from switchboard.protocol.fastpath import read_incoming_params
from switchboard.store import AppendResult
from switchboard.store.sqlite import MessageStore
from switchboard.store.wire import PACK_MIN_BYTES, Key, RawMessages, load_json
from tests.store.storekit import batch_rows, build_wire

__all__: list[str] = []

pytestmark = pytest.mark.anyio


def stored_bodies(path: Path) -> list[bytes]:
    """Every batch row's body as it is in the file, unpacked when zlib packed it."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT body FROM batches ORDER BY first_seq").fetchall()
    conn.close()
    bodies = [bytes(body) for (body,) in rows]
    return [zlib.decompress(b) if b[:1] == b"\x78" else b for b in bodies]


def odd_bytes(n: int, **extra: Any) -> bytes:
    """Message ``n`` as a connector might write it: spaced, members in its own order, and an
    unknown member."""
    m = build_wire(n, **extra)
    members = [f'"{k}" : {orjson.dumps(v).decode()}' for k, v in reversed(m.items())]
    return ("{ " + ",\n  ".join([*members, f'"x-unknown" :  [ {n} , "z" ]']) + " }").encode()


def keys(raws: Sequence[bytes]) -> list[Key]:
    return [("demo", m["channelId"], m["messageId"]) for m in map(orjson.loads, raws)]


async def test_a_raw_batch_is_stored_as_its_own_bytes_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    raws = [odd_bytes(n) for n in range(3)]
    store = await MessageStore.open(path)
    try:
        results = await store.submit_raw(keys(raws), RawMessages(raws), received_at=5.0)
        read = await store.read(0)
    finally:
        await store.aclose()
    assert results == [AppendResult(1, False), AppendResult(2, False), AppendResult(3, False)]
    assert stored_bodies(path) == [b"[" + b",".join(raws) + b"]"]
    assert [(m.seq, m.message_id, m.content) for m in read] == [
        (n + 1, f"m-{n}", [{"type": "text", "text": f"message {n}"}]) for n in range(3)
    ]
    assert {m.received_at for m in read} == {5.0}
    ((_, _, _, _, messages),) = batch_rows(path)
    assert [m["x-unknown"] for m in messages] == [[n, "z"] for n in range(3)]


async def test_a_large_raw_batch_read_from_a_frame_is_stored_packed_as_sent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    raws = [odd_bytes(n) for n in range(40)]
    params = b'{"messages": [' + b" ,  ".join(raws) + b"]}"
    read = read_incoming_params(params)
    assert read is not None
    checked = read["messages"]
    store = await MessageStore.open(path)
    try:
        keys_read = [("demo", m.channelId, m.messageId) for m in checked]
        await store.submit_raw(keys_read, RawMessages(checked.raws))
        stored = await store.read(0, limit=100)
    finally:
        await store.aclose()
    with sqlite3.connect(path) as conn:
        ((packed,),) = conn.execute("SELECT body FROM batches").fetchall()
    conn.close()
    assert len(b",".join(raws)) >= PACK_MIN_BYTES
    assert bytes(packed)[:1] == b"\x78"
    assert stored_bodies(path) == [b"[" + b",".join(raws) + b"]"]
    assert [m.message_id for m in stored] == [f"m-{n}" for n in range(40)]


async def test_a_raw_batch_holding_a_stored_message_stores_only_the_new_ones(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    raws = [odd_bytes(n) for n in range(4)]
    store = await MessageStore.open(path)
    try:
        first = await store.submit_raw(keys(raws[1:2]), RawMessages(raws[1:2]))
        second = await store.submit_raw(keys(raws), RawMessages(raws))
        again = await store.submit_raw(keys(raws[2:]), RawMessages(raws[2:]))
        read = await store.read(0)
    finally:
        await store.aclose()
    assert first == [AppendResult(1, False)]
    assert second == [
        AppendResult(2, False),
        AppendResult(1, True),
        AppendResult(3, False),
        AppendResult(4, False),
    ]
    assert again == [AppendResult(3, True), AppendResult(4, True)]
    assert stored_bodies(path) == [
        b"[" + raws[1] + b"]",
        b"[" + raws[0] + b"," + raws[2] + b"," + raws[3] + b"]",
    ]
    assert [(m.seq, m.message_id) for m in read] == [(1, "m-1"), (2, "m-0"), (3, "m-2"), (4, "m-3")]


async def test_a_raw_batch_repeating_a_message_stores_it_once(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    raws = [odd_bytes(0), odd_bytes(1), odd_bytes(0, content=[{"type": "text", "text": "again"}])]
    store = await MessageStore.open(path)
    try:
        results = await store.submit_raw(keys(raws), RawMessages(raws))
        read = await store.read(0)
    finally:
        await store.aclose()
    assert results == [AppendResult(1, False), AppendResult(2, False), AppendResult(1, True)]
    assert stored_bodies(path) == [b"[" + raws[0] + b"," + raws[1] + b"]"]
    assert [m.content[0]["text"] for m in read] == ["message 0", "message 1"]


async def test_a_raw_batch_of_stored_messages_only_writes_no_row(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    raws = [odd_bytes(n) for n in range(2)]
    store = await MessageStore.open(path)
    try:
        await store.submit_raw(keys(raws), RawMessages(raws))
        results = await store.submit_raw(keys(raws), RawMessages(raws))
        empty = await store.submit_raw([], RawMessages([]))
    finally:
        await store.aclose()
    assert results == [AppendResult(1, True), AppendResult(2, True)]
    assert empty == []
    assert len(stored_bodies(path)) == 1


async def test_a_number_beyond_a_double_reads_back_as_null(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    raw = odd_bytes(0)[:-2] + b', "big": 1e999, "metadata": {"n": -1e999, "k": 1} }'
    params = read_incoming_params(b'{"messages":[' + raw + b"]}")
    assert params is not None  # msgspec reads it; orjson does not
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    store = await MessageStore.open(path)
    try:
        await store.submit_raw(keys([odd_bytes(0)]), RawMessages(params["messages"].raws))
        (read,) = await store.read(0)
    finally:
        await store.aclose()
    assert read.metadata == {"n": None, "k": 1}
    ((_, _, _, _, (message,)),) = batch_rows(path)
    assert message["big"] is None
    assert message["x-unknown"] == [0, "z"]
    assert stored_bodies(path) == [b"[" + raw + b"]"]


class Counted(Sequence[bytes]):
    """Raw messages that remember which were asked for."""

    def __init__(self, raws: list[bytes]) -> None:
        self.raws = raws
        self.asked: list[int] = []

    def __len__(self) -> int:
        return len(self.raws)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        assert isinstance(index, int)
        self.asked.append(index)
        return self.raws[index]


def test_raw_messages_read_a_message_only_when_asked_and_once() -> None:
    raws = Counted([b'{"n": 0}', b"not json", b'{"n": 2}', b'{"n": 3}'])
    messages = RawMessages(raws)
    assert len(messages) == 4
    assert raws.asked == []
    assert messages[-1] == {"n": 3}
    assert raws.asked == [3]
    assert messages[3] is messages[-1]  # kept, not read again
    assert raws.asked == [3]
    assert messages[-2] == {"n": 2}
    assert messages[::2] == [{"n": 0}, {"n": 2}]
    assert messages[2:] == [{"n": 2}, {"n": 3}]
    assert messages[-4:-3] == [{"n": 0}]
    assert messages[5:9] == []
    assert sorted(set(raws.asked)) == [0, 2, 3]
    assert raws.asked.count(2) == 1
    with pytest.raises(json.JSONDecodeError):  # read (and refused) only now
        messages[1]
    with pytest.raises(IndexError):
        messages[4]
    with pytest.raises(IndexError):
        messages[-5]


def test_raw_messages_give_their_bytes_joined_and_picked() -> None:
    raws = [b'{"n": 0}', b'{ "n" : 1 }', b'{"n":2}']
    messages = RawMessages(raws)
    assert messages.body() == b'[{"n": 0},{ "n" : 1 },{"n":2}]'
    assert messages.body([2, 0]) == b'[{"n":2},{"n": 0}]'
    picked = messages.pick([2, 1])
    assert list(picked) == [{"n": 2}, {"n": 1}]
    assert picked.body() == b'[{"n":2},{ "n" : 1 }]'
    assert load_json(messages.body()) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert RawMessages([]).body() == b"[]"
