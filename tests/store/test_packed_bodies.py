"""Batch bodies of 2 KiB or more are stored compressed, and every body reads back as sent.

Issue #14: a 12 KB batch row costs two pages and about 250 µs to commit; packed, it is one.
Old files (plain bodies, schema version 2) still read, and are upgraded to version 3.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.store.records import StoreError
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.schema import SCHEMA_VERSION
from switchboard.store.wire import PACK_MIN_BYTES, decode_body, encode_body, pack_body
from tests.store.storekit import build_wire

pytestmark = pytest.mark.anyio


def stored_bodies(path: Path) -> list[bytes]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT body FROM batches ORDER BY first_seq").fetchall()
    conn.close()
    return [bytes(body) for (body,) in rows]


async def test_a_large_batch_is_stored_packed_and_read_back_as_sent(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    large = [build_wire(n) for n in range(50)]
    small = [build_wire(100)]
    store = await MessageStore.open(path)
    try:
        await store.submit_wire("demo", large)
        await store.submit_wire("demo", small)
        read = await store.read(0, limit=100)
    finally:
        await store.aclose()
    assert [m.message_id for m in read] == [m["messageId"] for m in large + small]
    packed, plain = stored_bodies(path)
    assert packed[:1] == b"\x78"
    assert len(packed) < len(encode_body(large)) // 3
    assert plain == encode_body(small)  # short bodies are kept as they are


async def test_a_store_with_plain_bodies_from_version_2_reads_and_is_upgraded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    store = await MessageStore.open(path)
    await store.submit_wire("demo", [build_wire(n) for n in range(50)])
    await store.aclose()
    body = encode_body([build_wire(n) for n in range(50)])
    with sqlite3.connect(path) as conn:  # as version 2 wrote it: the plain JSON array
        conn.execute("UPDATE batches SET body = ?", (body,))
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    store = await MessageStore.open(path)
    try:
        read = await store.read(0, limit=100)
    finally:
        await store.aclose()
    assert [m.message_id for m in read] == [build_wire(n)["messageId"] for n in range(50)]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    assert SCHEMA_VERSION == 3


def test_a_damaged_packed_body_is_a_store_error_not_a_crash() -> None:
    body = pack_body(encode_body([build_wire(n) for n in range(50)]))
    with pytest.raises(StoreError, match="cannot be unpacked"):
        decode_body(body[:-8])


def test_a_body_that_packing_would_not_shrink_is_stored_as_it_is() -> None:
    body = b"[" + random.Random(7).randbytes(PACK_MIN_BYTES * 2)  # incompressible
    assert pack_body(body) is body
    packed = pack_body(encode_body([build_wire(n) for n in range(50)]))
    assert pack_body(packed) is packed  # never packed twice


_text = st.text(max_size=400)
_message = st.fixed_dictionaries(
    {
        "channelId": _text,
        "messageId": _text,
        "author": st.fixed_dictionaries({"id": _text, "name": _text}),
        "timestamp": _text,
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=3
        ),
    }
)


@given(st.lists(_message, max_size=60))
def test_every_batch_reads_back_from_what_is_stored_for_it(messages: list[Any]) -> None:
    body = encode_body(messages)
    stored = pack_body(body)
    assert decode_body(stored) == orjson.loads(body)
    assert len(stored) <= len(body)
