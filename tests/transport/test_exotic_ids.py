"""Request ids orjson cannot carry are answered with their id (issue #10, part 5).

JSON allows integers of any size and escaped lone surrogates (``"\\ud800"``); JSON-RPC 2.0 §5
says a response's id is the request's id. A Peer sits on one end of an in-memory link and the
test writes raw frames on the other, reading the answers with the stdlib parser (which, unlike
orjson, reads such ids exactly).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    MemoryLink,
    Peer,
    memory_link_pair,
    method_not_found,
)

pytestmark = pytest.mark.anyio

HUGE = 123456789012345678901234567890
"""Beyond 64 bits: orjson would read it as a float."""


@asynccontextmanager
async def raw_peer() -> AsyncIterator[tuple[MemoryLink, list[tuple[str, Any]]]]:
    """A peer that echoes ``echo`` and records every call and notification it handles."""
    handled: list[tuple[str, Any]] = []

    async def on_request(method: str, params: Any) -> Any:
        handled.append((method, params))
        if method == "echo":
            return params
        if method == "huge":
            return {"n": HUGE}  # a result orjson cannot write either
        raise method_not_found(method)

    async def on_notification(method: str, params: Any) -> None:
        handled.append((method, params))

    raw, other = memory_link_pair()
    peer = Peer(other, on_request=on_request, on_notification=on_notification, name="under-test")
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.run)
        yield raw, handled
        await peer.aclose()


async def exchange(raw: MemoryLink, frame: bytes) -> Any:
    await raw.send(frame)
    with anyio.fail_after(5):
        return json.loads(await raw.receive())


@pytest.mark.parametrize(
    "request_id",
    [HUGE, -HUGE, 2**64, -(2**63) - 1],
    ids=["huge", "huge-negative", "just-beyond-unsigned", "just-beyond-signed"],
)
async def test_an_integer_id_beyond_64_bits_is_answered_with_that_exact_id(
    request_id: int,
) -> None:
    frame = f'{{"jsonrpc":"2.0","id":{request_id},"method":"echo","params":{{"a":1}}}}'
    async with raw_peer() as (raw, _):
        answer = await exchange(raw, frame.encode())
        missing = await exchange(
            raw, f'{{"jsonrpc":"2.0","id":{request_id},"method":"nope"}}'.encode()
        )
    assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {"a": 1}}
    assert missing["id"] == request_id
    assert missing["error"]["code"] == METHOD_NOT_FOUND


async def test_a_string_id_with_an_escaped_lone_surrogate_is_echoed_as_it_came() -> None:
    async with raw_peer() as (raw, _):
        await raw.send(b'{"jsonrpc":"2.0","id":"a\\ud800b","method":"echo","params":[1]}')
        with anyio.fail_after(5):
            written = await raw.receive()
    assert b'"id":"a\\ud800b"' in written
    assert json.loads(written) == {"jsonrpc": "2.0", "id": "a\ud800b", "result": [1]}


async def test_a_result_that_cannot_be_written_is_an_internal_error_carrying_the_exotic_id() -> (
    None
):
    async with raw_peer() as (raw, _):
        answer = await exchange(raw, f'{{"jsonrpc":"2.0","id":{HUGE},"method":"huge"}}'.encode())
    assert answer["id"] == HUGE
    assert answer["error"]["code"] == INTERNAL_ERROR


async def test_params_holding_a_lone_surrogate_are_refused_with_the_id_and_the_field() -> None:
    """The handler never sees text that is not text; the caller learns which field it was."""
    frame = b'{"jsonrpc":"2.0","id":7,"method":"echo","params":{"content":[{"text":"x\\udc00"}]}}'
    async with raw_peer() as (raw, handled):
        answer = await exchange(raw, frame)
    assert answer["id"] == 7
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["data"]["errors"][0]["field"] == "content.0.text"
    assert "surrogate" in answer["error"]["data"]["errors"][0]["message"]
    assert handled == []


async def test_a_notification_holding_a_lone_surrogate_is_dropped_unanswered() -> None:
    async with raw_peer() as (raw, handled):
        await raw.send(b'{"jsonrpc":"2.0","method":"note","params":{"t":"\\ud800"}}')
        await raw.send(b'{"jsonrpc":"2.0","method":"note","params":{"t":"ok"}}')
        answer = await exchange(raw, b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[2]}')
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": [2]}  # nothing answered before it
    assert handled == [("note", {"t": "ok"}), ("echo", [2])]


async def test_a_batch_answers_each_exotic_id_beside_the_ordinary_ones() -> None:
    frame = (
        f'[{{"jsonrpc":"2.0","id":{HUGE},"method":"echo","params":[1]}},'
        '{"jsonrpc":"2.0","id":"\\udbff","method":"echo","params":[2]},'
        '{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}]'
    ).encode()
    async with raw_peer() as (raw, _):
        answers = await exchange(raw, frame)
    assert [(a["id"], a["result"]) for a in answers] == [(HUGE, [1]), ("\udbff", [2]), (3, [3])]


async def test_text_that_is_not_json_is_still_a_parse_error() -> None:
    """The stdlib second reading accepts nothing orjson rejects except those two: NaN is not
    JSON, and a broken frame stays broken."""
    async with raw_peer() as (raw, handled):
        nan = await exchange(raw, b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[NaN]}')
        broken = await exchange(raw, b'{"jsonrpc":"2.0","id":"\\ud800","method":')
    assert (nan["id"], nan["error"]["code"]) == (None, PARSE_ERROR)
    assert (broken["id"], broken["error"]["code"]) == (None, PARSE_ERROR)
    assert handled == []
