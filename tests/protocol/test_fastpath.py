"""The hand-written incoming check never accepts what the pydantic model refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.protocol import IncomingMessage
from switchboard.protocol.fastpath import incoming_is_valid

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.floats())
strings = st.text(max_size=6)
maybe = st.one_of(strings, scalars)
text_block = st.fixed_dictionaries({"type": st.just("text"), "text": maybe})
any_block = st.one_of(
    text_block,
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio", "resource", "x"])}),
    scalars,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "channelId": maybe,
        "messageId": maybe,
        "timestamp": maybe,
        "author": st.one_of(
            st.fixed_dictionaries({}, optional={"id": maybe, "name": maybe}), scalars
        ),
        "content": st.one_of(st.lists(any_block, max_size=3), scalars),
        "threadId": maybe,
        "metadata": st.one_of(st.dictionaries(strings, scalars, max_size=2), scalars),
        "tags": st.one_of(st.lists(maybe, max_size=3), scalars),
        "extra": scalars,
    },
)


def _model_accepts(m: Any) -> bool:
    try:
        IncomingMessage.model_validate(m)
    except Exception:
        return False
    return True


@given(messages)
def test_the_fast_check_accepts_only_what_the_model_accepts(m: dict[str, Any]) -> None:
    if incoming_is_valid(m):
        assert _model_accepts(m)


@given(
    cid=st.text(min_size=1, max_size=8),
    mid=st.text(min_size=1, max_size=8),
    text=st.text(max_size=20),
    tags=st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=3)),
)
def test_the_fast_check_accepts_well_formed_text_messages(
    cid: str, mid: str, text: str, tags: list[str] | None
) -> None:
    m: dict[str, Any] = {
        "channelId": cid,
        "messageId": mid,
        "author": {"id": "u", "name": "Ann"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "text", "text": text}],
    }
    if tags is not None:
        m["tags"] = tags
    assert incoming_is_valid(m)
    assert _model_accepts(m)


def test_messages_with_other_content_take_the_full_path() -> None:
    m = {
        "channelId": "c",
        "messageId": "m",
        "author": {"id": "u", "name": "Ann"},
        "timestamp": "t",
        "content": [{"type": "image", "uri": "https://example.invalid/x.png"}],
    }
    assert not incoming_is_valid(m)
    assert _model_accepts(m)
