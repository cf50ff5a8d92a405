"""Sans-I/O classification of inbound frames (messages.decode_frame)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from switchboard.transport import INVALID_REQUEST, PARSE_ERROR
from switchboard.transport.messages import (
    Discarded,
    ImmediateReply,
    InboundCall,
    InboundNotification,
    InboundResponse,
    decode_frame,
)


def reply_of(frame: bytes) -> Any:
    (event,) = decode_frame(frame)
    assert isinstance(event, ImmediateReply)
    return orjson.loads(event.frame)


@pytest.mark.parametrize("request_id", [7, "7", "", 0, -3, None])
def test_a_request_keeps_its_id_value_and_type(request_id: object) -> None:
    frame = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "m", "params": [1]})
    (event,) = decode_frame(frame)
    assert isinstance(event, InboundCall)
    assert event.id == request_id
    assert type(event.id) is type(request_id)
    assert (event.method, event.params) == ("m", [1])


def test_notifications_and_responses_are_told_apart() -> None:
    assert decode_frame(b'{"jsonrpc":"2.0","method":"n"}') == [InboundNotification("n", None)]
    assert decode_frame(b'{"jsonrpc":"2.0","id":3,"result":null}') == [
        InboundResponse(3, None, None)
    ]
    (error,) = decode_frame(b'{"jsonrpc":"2.0","id":"3","error":{"code":1,"message":"m"}}')
    assert error == InboundResponse("3", None, {"code": 1, "message": "m"})


@pytest.mark.parametrize(
    ("frame", "answer_id"),
    [
        (b"5", None),
        (b'"text"', None),
        (b"null", None),
        (b'{"jsonrpc":"2.0"}', None),
        (b'{"jsonrpc":"2.0","id":3}', 3),
        (b'{"jsonrpc":"1.0","id":4,"method":"m"}', 4),
        (b'{"id":"x","method":"m"}', "x"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', None),
        (b'{"jsonrpc":"2.0","id":2,"method":7}', 2),
        (b'{"jsonrpc":"2.0","id":2,"method":"m","params":3}', 2),
        (b"[]", None),
    ],
)
def test_json_that_is_not_a_valid_message_is_an_invalid_request(
    frame: bytes, answer_id: object
) -> None:
    reply = reply_of(frame)
    assert reply["error"]["code"] == INVALID_REQUEST
    assert reply["id"] == answer_id
    assert type(reply["id"]) is type(answer_id)


@pytest.mark.parametrize(
    "frame", [b'{"id": 1, "method"', b'  [{"jsonrpc": "2.0"', b"[ ]]", b"\t{oops}"]
)
def test_an_unparsable_object_or_batch_is_answered_with_a_parse_error_and_noted(
    frame: bytes,
) -> None:
    """JSON-RPC 2.0 §5.1: invalid JSON that was meant as a message is answered -32700."""
    noted, answer = decode_frame(frame)
    assert noted == Discarded("unparsable_message_answered", frame.decode())
    assert isinstance(answer, ImmediateReply)
    assert orjson.loads(answer.frame) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": PARSE_ERROR, "message": "Parse error"},
    }


@pytest.mark.parametrize(
    "line",
    [
        b"Logged in as bot#1234",
        b"[discord-mcpl] Client initialized (MCPL mode)",
        b"[2026-12-01 12:00:00] listening",
        b"  [1, 2",
    ],
)
def test_a_line_that_is_no_json_rpc_message_is_junk_to_skip_without_an_answer(
    line: bytes,
) -> None:
    (event,) = decode_frame(line)
    assert event == Discarded("junk_line_skipped", line.decode())


def test_only_the_first_200_characters_of_a_junk_line_are_kept() -> None:
    (event,) = decode_frame(b"x" * 1000)
    assert isinstance(event, Discarded)
    assert event.detail == "x" * 200


def test_a_wrong_version_without_an_id_is_dropped_quietly() -> None:
    (event,) = decode_frame(b'{"jsonrpc":"1.0","method":"n"}')
    assert isinstance(event, Discarded)
    (response,) = decode_frame(b'{"jsonrpc":"1.0","id":1,"result":1}')
    assert isinstance(response, Discarded)


def test_a_batch_yields_its_events_and_invalid_elements_take_slots() -> None:
    events = decode_frame(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},'
        b'{"jsonrpc":"2.0","id":9,"result":0},5]'
    )
    call, note, response = events
    assert isinstance(call, InboundCall)
    assert call.batch is not None
    assert note == InboundNotification("n", None)
    assert response == InboundResponse(9, 0, None)
    whole = call.batch.fill(call.slot, b'{"jsonrpc":"2.0","id":1,"result":true}')
    assert whole is not None
    answer = orjson.loads(whole)
    assert answer[0] == {"jsonrpc": "2.0", "id": 1, "result": True}
    assert answer[1]["error"]["code"] == INVALID_REQUEST


def test_a_batch_of_invalid_elements_only_is_answered_at_once() -> None:
    reply = reply_of(b"[1, 2]")
    assert [entry["error"]["code"] for entry in reply] == [INVALID_REQUEST, INVALID_REQUEST]


def test_a_batch_of_notifications_needs_no_answer() -> None:
    events = decode_frame(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]')
    assert events == [InboundNotification("a", None), InboundNotification("b", None)]
