"""Reading a ``channels/incoming`` batch straight from its bytes accepts exactly what the
hand-written check accepts, and keeps each message's own bytes (issue #14)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import assume, given
from hypothesis import strategies as st

from switchboard.protocol.fastpath import CheckedMessages, incoming_is_valid, read_incoming_params
from switchboard.store.wire import load_json

__all__: list[str] = []

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.floats(allow_nan=False)
)
strings = st.text(max_size=6)
maybe = st.one_of(strings, scalars)
text_block = st.fixed_dictionaries(
    {"type": st.just("text"), "text": maybe}, optional={"annotations": scalars}
)
any_block = st.one_of(
    text_block,
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio", "resource", "x"])}),
    st.fixed_dictionaries({}, optional={"text": strings}),
    scalars,
)
nested = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(strings, inner, max_size=3)
    ),
    max_leaves=6,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "channelId": maybe,
        "messageId": maybe,
        "timestamp": maybe,
        "author": st.one_of(
            st.fixed_dictionaries({}, optional={"id": maybe, "name": maybe, "avatar": nested}),
            scalars,
        ),
        "content": st.one_of(st.lists(any_block, max_size=3), scalars),
        "threadId": maybe,
        "metadata": st.one_of(st.dictionaries(strings, nested, max_size=2), nested),
        "tags": st.one_of(st.lists(maybe, max_size=3), scalars),
        "extra": nested,
    },
)
valid_messages = st.fixed_dictionaries(
    {
        "channelId": st.text(min_size=1, max_size=8),
        "messageId": st.text(min_size=1, max_size=8),
        "author": st.fixed_dictionaries({"id": strings, "name": strings}),
        "timestamp": st.text(min_size=1, max_size=8),
        "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": strings})),
    },
    optional={
        "threadId": st.one_of(st.none(), strings),
        "metadata": st.one_of(st.none(), st.dictionaries(strings, nested, max_size=2)),
        "tags": st.one_of(st.none(), st.lists(strings, max_size=3)),
        "extra": nested,
    },
)
batches = st.lists(st.one_of(messages, valid_messages), max_size=4)


def _dumps(value: Any) -> bytes:
    """``value`` as orjson writes it; values orjson cannot write are assumed away."""
    try:
        return orjson.dumps(value)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits
        assume(False)
        raise


@given(batches)
def test_a_batch_is_read_exactly_when_every_message_passes_the_fast_check(
    batch: list[dict[str, Any]],
) -> None:
    data = _dumps({"messages": batch})
    decoded = orjson.loads(data)["messages"]
    read = read_incoming_params(data)
    assert (read is not None) == all(incoming_is_valid(m) for m in decoded)


@given(st.lists(valid_messages, max_size=4), st.sampled_from([None, 1, 4]))
def test_a_batch_read_keeps_each_message_s_own_bytes_and_keys(
    batch: list[dict[str, Any]], indent: int | None
) -> None:
    data = _dumps({"messages": batch})
    if indent is not None:  # a connector that writes spaces and new lines
        data = json.dumps(orjson.loads(data), indent=indent, ensure_ascii=False).encode()
    decoded = orjson.loads(data)["messages"]
    read = read_incoming_params(data)
    assume(read is not None)
    assert read is not None
    checked = read["messages"]
    assert isinstance(checked, CheckedMessages)
    assert len(checked) == len(checked.raws) == len(decoded)
    for message, raw, original in zip(checked, checked.raws, decoded, strict=True):
        assert message.channelId == original["channelId"]
        assert message.messageId == original["messageId"]
        assert load_json(raw) == original
        if indent is None:
            assert bytes(raw) == orjson.dumps(original)


def _text(n: int, **members: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "channelId": "c",
        "messageId": f"m-{n}",
        "author": {"id": "u", "name": "Ann"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "text", "text": f"hello {n}"}],
    }
    message.update(members)
    return message


def test_a_well_formed_text_batch_is_read_in_order() -> None:
    batch = [_text(0), _text(1, metadata={"k": [1, 2]}, tags=["a"], threadId="t", x=1e300)]
    read = read_incoming_params(orjson.dumps({"messages": batch, "_meta": {"n": 1}}))
    assert read is not None
    assert [m.messageId for m in read["messages"]] == ["m-0", "m-1"]
    assert [load_json(raw) for raw in read["messages"].raws] == batch


def test_one_image_message_sends_the_whole_batch_to_the_general_path() -> None:
    image = _text(1, content=[{"type": "image", "uri": "https://example.invalid/x.png"}])
    assert read_incoming_params(orjson.dumps({"messages": [_text(0), image, _text(2)]})) is None


def test_metadata_that_is_not_an_object_sends_the_batch_to_the_general_path() -> None:
    for metadata in ([1], "note", 3, 2.5, True, False):
        data = orjson.dumps({"messages": [_text(0, metadata=metadata)]})
        assert read_incoming_params(data) is None, metadata
    assert read_incoming_params(orjson.dumps({"messages": [_text(0, metadata=None)]}))


def test_messages_that_are_not_a_list_send_the_batch_to_the_general_path() -> None:
    for messages in ({"0": _text(0)}, _text(0), "m", None, 1):
        assert read_incoming_params(orjson.dumps({"messages": messages})) is None, messages
    assert read_incoming_params(b"{}") is None
    assert read_incoming_params(b"[]") is None


def test_an_empty_batch_is_read_as_no_messages() -> None:
    read = read_incoming_params(b'{"messages": []}')
    assert read is not None
    assert read["messages"] == []
    assert read["messages"].raws == []


def test_a_deeply_nested_unknown_member_is_not_a_crash() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    data = b'{"messages":[' + orjson.dumps(_text(0))[:-1] + b',"x":' + deep + b"}]}"
    read_incoming_params(data)  # accepted or not, but no exception


# -- members written twice ----------------------------------------------------------------------
#
# JSON leaves a repeated member's meaning open; orjson (the general path) keeps the last one.
# The reader may refuse such a message (the general path then judges it), but it must never
# accept one the general path would refuse, nor read other ids than the general path reads.


class Members(list[tuple[str, Any]]):
    """A JSON object written member by member, so a member may come twice."""


def _write(value: Any) -> bytes:
    if isinstance(value, Members):
        return b"{" + b",".join(orjson.dumps(k) + b":" + _write(v) for k, v in value) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_write(v) for v in value) + b"]"
    return orjson.dumps(value)


@st.composite
def _members(
    draw: st.DrawFn,
    good: dict[str, st.SearchStrategy[Any]],
    odd: st.SearchStrategy[Any],
) -> Members:
    """An object holding each member of ``good`` once (with a good value), and some written
    again with a good or an ``odd`` value, in a drawn order."""
    pairs = [(name, draw(strategy)) for name, strategy in good.items()]
    for name in draw(st.lists(st.sampled_from(sorted(good)), max_size=3)):
        pairs.append((name, draw(st.one_of(good[name], odd))))
    return Members(draw(st.permutations(pairs)))


short = st.sampled_from(["", "a", "b"])
loose: st.SearchStrategy[Any] = st.one_of(
    short, st.none(), st.integers(0, 2), st.booleans(), st.just([])
)
word = st.sampled_from(["a", "b"])
twice_blocks = _members({"type": st.just("text"), "text": word}, st.sampled_from(["image", 1]))
twice_messages = _members(
    {
        "channelId": word,
        "messageId": word,
        "timestamp": word,
        "author": _members({"id": word, "name": word}, loose),
        "content": st.lists(twice_blocks, max_size=2),
        "threadId": st.one_of(word, st.none()),
        "metadata": st.one_of(_members({"k": loose}, loose), st.none()),
        "tags": st.lists(word, max_size=2),
    },
    loose,
)


@given(st.lists(twice_messages, max_size=3))
def test_a_member_written_twice_never_gets_a_message_past_the_general_path(
    batch: list[Members],
) -> None:
    data = b'{"messages":' + _write(batch) + b"}"
    read = read_incoming_params(data)
    if read is None:
        return
    decoded = orjson.loads(data)["messages"]
    assert all(incoming_is_valid(m) for m in decoded)
    for message, original in zip(read["messages"], decoded, strict=True):
        assert message.channelId == original["channelId"]
        assert message.messageId == original["messageId"]
