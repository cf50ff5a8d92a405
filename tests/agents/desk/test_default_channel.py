"""The default channel reads a batch the transport checked exactly as it reads the wire
messages (issue #14): the same latest non-marker message, whatever the tags and metadata."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.channels import ChannelRegistry
from switchboard.events import MessagesAccepted
from switchboard.protocol.fastpath import read_incoming_params
from switchboard.store.wire import RawMessages
from tests.channels.channels_support import Desc

__all__: list[str] = []

tags = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["chat:reaction", "chat:edited", "topic", "chat:deleted", "x"])),
)
metadata: st.SearchStrategy[dict[str, Any] | None] = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries(
        {"eventType": st.sampled_from(["message_edit", "Reaction", "message", "DELETED", 3])}
    ),
    st.fixed_dictionaries({"other": st.integers(-(2**63), 2**63 - 1)}),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "channelId": draw(st.sampled_from(["room", "hall", "gone"])),
        "messageId": draw(st.sampled_from(["m1", "m2", "m3"])),
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-12-02T12:00:00Z",
        "content": [{"type": "text", "text": "hi"}],
    }
    for key, value in (
        ("tags", draw(tags)),
        ("metadata", draw(metadata)),
        ("threadId", draw(st.sampled_from([None, "t1"]))),
    ):
        if value is not None or draw(st.booleans()):
            message[key] = value
    return message


@settings(max_examples=300, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=6))
def test_a_checked_batch_moves_the_default_exactly_as_its_wire_messages_do(
    batch: list[dict[str, Any]],
) -> None:
    registry = ChannelRegistry()
    registry.register("s", [Desc("room"), Desc("hall")])
    read = read_incoming_params(orjson.dumps({"messages": batch}))
    assert read is not None
    checked = read["messages"]
    raw = RawMessages(checked.raws, checked.body)
    by_checked, by_wire = DefaultChannel(registry), DefaultChannel(registry)
    by_checked.observe(MessagesAccepted("s", raw, None, checked))
    by_wire.observe(MessagesAccepted("s", batch))
    state = (by_checked.ref, by_checked.message_id, by_checked.thread_id)
    assert state == (by_wire.ref, by_wire.message_id, by_wire.thread_id)
