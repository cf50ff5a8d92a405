"""A params reader (issue #14) never changes how a frame is classified.

``decode_frame(frame, readers)`` must give the events ``decode_frame(frame)`` gives: same types,
ids, methods, batch slots, immediate replies and discards. Only the params of a call the reader
read may differ, and then they hold the same messages, checked and kept as their bytes.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from switchboard.protocol.fastpath import (
    CheckedMessages,
    IncomingRawParams,
    check_incoming_params,
    read_incoming_params,
)
from switchboard.store.wire import load_json
from switchboard.transport.messages import (
    Discarded,
    ImmediateReply,
    Inbound,
    InboundCall,
    ParamsReader,
    ParamsReaders,
    decode_frame,
)

__all__: list[str] = []

INCOMING = "channels/incoming"
READERS: ParamsReaders = {INCOMING: read_incoming_params}
# What a connector session gives its peer: envelope and list of messages read in one pass.
ONE_PASS: ParamsReaders = {INCOMING: ParamsReader(IncomingRawParams, check_incoming_params)}
LONE = "\ud800"  # an unpaired surrogate: not text, though JSON can escape it

words = st.one_of(st.text(max_size=5), st.just(LONE))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    words,
)
nested = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(words, inner, max_size=3)),
    max_leaves=5,
)
text_message = st.fixed_dictionaries(
    {
        "channelId": st.sampled_from(["c", "d", ""]),
        "messageId": st.text(min_size=1, max_size=4),
        "author": st.fixed_dictionaries({"id": st.just("u"), "name": st.just("Ann")}),
        "timestamp": st.just("2026-11-29T12:00:00Z"),
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": words}), max_size=2
        ),
    },
    optional={
        "threadId": st.one_of(st.none(), words),
        "metadata": st.one_of(st.none(), st.dictionaries(words, nested, max_size=2), scalars),
        "tags": st.one_of(st.none(), st.lists(words, max_size=2)),
        "extra": nested,
    },
)
other_message = st.one_of(
    text_message.map(lambda m: {**m, "content": [{"type": "image", "uri": "x"}]}),
    text_message.map(lambda m: {k: v for k, v in m.items() if k != "author"}),
    nested,
)
params = st.one_of(
    st.fixed_dictionaries(
        {"messages": st.lists(text_message, max_size=3)}, optional={"_meta": nested}
    ),
    st.fixed_dictionaries(
        {"messages": st.lists(st.one_of(text_message, other_message), max_size=3)}
    ),
    nested,
)
ids = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    words,
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """One JSON-RPC message (or something like one), members in a drawn order."""
    members: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        members["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2.0]))
    if draw(st.integers(0, 4)):
        members["id"] = draw(ids)
    kind = draw(st.integers(0, 9))
    if kind < 7:
        members["method"] = draw(st.sampled_from([INCOMING, INCOMING, INCOMING, "other", 1]))
        if draw(st.integers(0, 9)):
            members["params"] = draw(params)
    elif kind < 8:
        members["result"] = draw(nested)
    elif kind < 9:
        members["error"] = draw(st.one_of(st.fixed_dictionaries({"code": st.integers()}), nested))
    if draw(st.booleans()):
        members["x"] = draw(nested)
    order = draw(st.permutations(list(members)))
    return {key: members[key] for key in order}


clean_words = st.text(max_size=5)
clean_nested = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), clean_words),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(clean_words, inner, max_size=3)
    ),
    max_leaves=5,
).filter(lambda v: v not in (float("inf"), float("-inf")))
clean_message = st.fixed_dictionaries(
    {
        "channelId": st.sampled_from(["c", "d"]),
        "messageId": st.text(min_size=1, max_size=4),
        "author": st.fixed_dictionaries({"id": clean_words, "name": clean_words}),
        "timestamp": st.just("2026-11-29T12:00:00Z"),
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": clean_words}), max_size=2
        ),
    },
    optional={
        "threadId": st.one_of(st.none(), clean_words),
        "metadata": st.one_of(st.none(), st.dictionaries(clean_words, clean_nested, max_size=2)),
        "tags": st.one_of(st.none(), st.lists(clean_words, max_size=2)),
        "extra": clean_nested,
    },
)


@st.composite
def well_formed_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A ``channels/incoming`` request the reader reads, members in a drawn order."""
    members: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": draw(st.one_of(st.integers(min_value=-(2**70), max_value=2**70), clean_words)),
        "method": INCOMING,
        "params": {"messages": draw(st.lists(clean_message, max_size=3))},
    }
    if draw(st.booleans()):
        members["x"] = draw(clean_nested)
    order = draw(st.permutations(list(members)))
    return {key: members[key] for key in order}


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A frame as a connector might write it: compact or spaced, ASCII-escaped or not."""
    shape = draw(st.integers(0, 9))
    value: Any
    if shape < 4:
        value = draw(well_formed_requests())
    elif shape < 8:
        value = draw(messages())
    else:
        value = draw(st.lists(st.one_of(messages(), well_formed_requests()), max_size=3))
    ascii_only = draw(st.booleans())
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]))
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    # Without ASCII escapes a lone surrogate becomes bytes that are not UTF-8.
    return text.encode("utf-8", "surrogatepass")


def as_stored(value: Any) -> Any:
    """``value`` as the store reads it back (:func:`load_json`): an integer beyond 64 bits as
    a float (orjson's reading), a number beyond a double's range as null.

    The general path reads a frame with the stdlib parser when its id is a huge integer or a
    lone surrogate, and then keeps such numbers exactly; the raw bytes are kept exactly too,
    but read back the way orjson reads them (or exactly, when the stdlib reads the message
    because it holds a number beyond a double's range: so both sides are normalised).
    """
    if type(value) is int and not -(2**63) <= value < 2**64:
        return float(value)
    if type(value) is float and value in (float("inf"), float("-inf")):
        return None
    if type(value) is list:
        return [as_stored(v) for v in value]
    if type(value) is dict:
        return {k: as_stored(v) for k, v in value.items()}
    return value


def _same_value(a: Any, b: Any) -> bool:
    """Equal, with the same types (True is not 1, 1.0 is not 1)."""
    return type(a) is type(b) and a == b


def assert_same_classification(frame: bytes) -> None:
    general = decode_frame(frame)
    for readers in (READERS, ONE_PASS):  # a params function, and the one-pass reader
        read = decode_frame(frame, readers)
        assert [type(e) for e in read] == [type(e) for e in general], frame
        for ours, theirs in zip(read, general, strict=True):
            if isinstance(theirs, ImmediateReply | Discarded):
                assert ours == theirs
            elif isinstance(theirs, InboundCall):
                assert isinstance(ours, InboundCall)
                _assert_same_call(ours, theirs)
            else:
                assert ours == theirs


def _assert_same_call(ours: InboundCall, theirs: InboundCall) -> None:
    assert _same_value(ours.id, theirs.id)
    assert ours.method == theirs.method
    assert (ours.batch is None) == (theirs.batch is None)
    assert ours.slot == theirs.slot
    assert not ours.answered
    if type(ours.params) is type(theirs.params) and ours.params == theirs.params:
        return
    assert ours.method == INCOMING
    assert ours.batch is None
    checked = ours.params["messages"]
    assert type(checked) is CheckedMessages
    stored = [load_json(raw) for raw in checked.raws]
    assert as_stored(stored) == as_stored(theirs.params["messages"])
    assert [(m.channelId, m.messageId) for m in checked] == [
        (m["channelId"], m["messageId"]) for m in theirs.params["messages"]
    ]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
@example(b'{"jsonrpc":"2.0","id":true,"method":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":1.0,"method":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":1e2,"method":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":null,"method":"channels/incoming","params":{"messages":[]}}')
@example(
    b'{"jsonrpc":"2.0","id":123456789012345678901234,"method":"channels/incoming","params":{}}'
)
@example(
    b'{"jsonrpc":"2.0","id":123456789012345678901234,"method":"channels/incoming","params":'
    b'{"messages":[{"channelId":"c","messageId":"m","author":{"id":"u","name":"A"},'
    b'"timestamp":"t","content":[],"x":[123456789012345678901234567,1e999]}]}}'
)
@example(b'{"jsonrpc":"2.0","id":"\\ud800","method":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","method":"channels/incoming","params":{"messages":[]}}')
@example(b'[{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]}}]')
@example(b'{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]},"id":2}')
@example(
    b'{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]},"method":"x"}'
)
@example(
    b'{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]},"params":1}'
)
@example(b'{"jsonrpc":"1.0","id":1,"method":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":1,"\\u006dethod":"channels/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":1,"method":"channels\\/incoming","params":{"messages":[]}}')
@example(b'{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]}} junk')
@example(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{}}')
@example(b'{"jsonrpc":"2.0","id":1,"method":"channels/incoming","params":{"messages":[]},"x":NaN}')
def test_readers_never_change_how_a_frame_is_classified(frame: bytes) -> None:
    assert_same_classification(frame)


def _incoming_frame(extra: bytes) -> bytes:
    message = (
        b'{"channelId":"c","messageId":"m","author":{"id":"u","name":"Ann"},'
        b'"timestamp":"t","content":[{"type":"text","text":"hi"}]' + extra + b"}"
    )
    return (
        b'{"jsonrpc":"2.0","id":7,"method":"channels/incoming","params":{"messages":['
        + message
        + b"]}}"
    )


def test_a_well_formed_batch_is_read_by_the_reader() -> None:
    frame = _incoming_frame(b', "x" : [1, {"y": null}]')
    (call,) = decode_frame(frame, READERS)
    assert isinstance(call, InboundCall)
    assert type(call.params["messages"]) is CheckedMessages
    assert bytes(call.params["messages"].raws[0]).endswith(b'"x" : [1, {"y": null}]}')
    assert_same_classification(frame)


def test_an_unknown_member_with_bytes_that_are_not_utf8_is_classified_as_without_readers() -> None:
    for junk in (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):
        frame = _incoming_frame(b',"x":"' + junk + b'"')
        assert_same_classification(frame)
        assert not any(isinstance(e, InboundCall) for e in decode_frame(frame, READERS))


def test_an_unknown_member_with_an_escaped_lone_surrogate_is_classified_as_without_readers() -> (
    None
):
    for member in (b',"x":"\\ud800"', b',"x":{"\\udfff":1}', b',"x":["a\\ud800b"]'):
        frame = _incoming_frame(member)
        assert_same_classification(frame)
        (reply,) = decode_frame(frame, READERS)
        assert isinstance(reply, ImmediateReply)
        assert b"-32602" in reply.frame
        assert b"messages.0.x" in reply.frame


def test_an_escaped_lone_surrogate_in_a_checked_member_is_classified_as_without_readers() -> None:
    frame = _incoming_frame(b"").replace(b'"text":"hi"', b'"text":"\\udc00"')
    assert_same_classification(frame)


def test_a_number_beyond_a_double_in_an_unknown_member_is_classified_as_without_readers() -> None:
    frame = _incoming_frame(b',"x":1e999')
    general = decode_frame(frame)
    read = decode_frame(frame, READERS)
    assert [type(e) for e in read] == [type(e) for e in general] == [InboundCall]
    (call,) = read
    assert isinstance(call, InboundCall)
    # The general path reads inf, which orjson would store as null; the raw bytes read as null.
    assert load_json(call.params["messages"].raws[0])["x"] is None


def test_a_reader_that_says_none_leaves_the_general_path_s_result() -> None:
    seen: list[bytes] = []

    def refuse(raw: msgspec.Raw) -> None:
        seen.append(bytes(raw))
        return None

    frame = _incoming_frame(b"")
    events: list[Inbound] = decode_frame(frame, {INCOMING: refuse})
    (call,) = events
    assert isinstance(call, InboundCall)
    assert call.params == orjson.loads(frame)["params"]
    assert seen == [orjson.dumps(orjson.loads(frame)["params"])]


def test_a_reader_for_another_method_is_not_asked() -> None:
    asked: list[bytes] = []

    def other(raw: msgspec.Raw) -> Any:
        asked.append(bytes(raw))
        return {"read": True}

    frame = _incoming_frame(b"")
    (call,) = decode_frame(frame, {"push/event": other})
    assert isinstance(call, InboundCall)
    assert call.params == orjson.loads(frame)["params"]
    assert asked == []
