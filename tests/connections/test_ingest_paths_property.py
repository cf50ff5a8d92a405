"""The two ingest loops and the store's four write entries agree (a hypothesis property).

The same batches of ``channels/incoming`` go through :meth:`IncomingHandler.handle` read the
general way (orjson dicts) and read the hot way (the transport's checked messages, which
``handle`` hands to its checked loop), each into a store of its own: the answers, the stored
rows and the ``MessagesAccepted`` events must be the same. Then the messages those batches
accepted go into four more stores, one per write entry of the store (``submit_raw``,
``submit_wire``, ``submit``, ``append``): the results and the stored rows must be the same as
the ingest loops'. Channel ids, message ids (so duplicates, within a batch and across
batches), authors, threads, metadata and tags vary; channels are registered both ways,
inbound-only, outbound-only or not at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from switchboard.channels import ChannelRegistry
from switchboard.connections.incoming import IncomingHandler
from switchboard.events import EventBus, HostEvent, MessagesAccepted
from switchboard.protocol.fastpath import incoming_is_valid, read_incoming_params
from switchboard.store import AppendResult, IncomingRecord, RawMessages, StoredMessage
from switchboard.store.sqlite import MessageStore
from switchboard.transport import Deferred
from tests.channels.channels_support import Desc

SID = "s"
NOW = 1_700_000_000.0
REGISTERED = [
    Desc("both", direction="bidirectional"),
    Desc("in", direction="inbound"),
    Desc("out", direction="outbound"),
]
CHANNELS = ["both", "in", "out", "nowhere"]

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_metadata = st.none() | st.dictionaries(
    st.sampled_from(["k", "mentions", "isMention"]),
    st.one_of(st.booleans(), st.integers(-5, 5), _text, st.lists(_text, max_size=2)),
    max_size=2,
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "channelId": draw(st.sampled_from(CHANNELS)),
        "messageId": draw(st.sampled_from(["m1", "m2", "m3", "m4", "m5"])),
        "author": {"id": draw(st.sampled_from(["u1", "u2"])), "name": draw(_text)},
        "timestamp": "2026-12-01T10:00:00Z",
        "content": [{"type": "text", "text": draw(_text)}],
    }
    if draw(st.booleans()):
        message["threadId"] = draw(st.sampled_from(["t1", "t2"]))
    metadata = draw(_metadata)
    if metadata is not None:
        message["metadata"] = metadata
    if draw(st.booleans()):
        message["tags"] = draw(st.lists(st.sampled_from(["chat:addressed", "x"]), max_size=2))
    return message


batches = st.lists(st.lists(messages(), min_size=1, max_size=6), min_size=1, max_size=4)


class _Recorder:
    def __init__(self) -> None:
        self.events: list[HostEvent] = []

    def __call__(self, event: HostEvent) -> None:
        self.events.append(event)


async def _answer(deferred: Deferred) -> Any:
    """What the peer would answer for ``deferred``, after running its work the peer's way."""
    future = deferred.future
    if future is None:
        return await deferred.wait()
    assert isinstance(future, asyncio.Future)
    await asyncio.wait([future])
    value = deferred.settle(future)
    deferred.run_after(future)
    return value


def _plain(answer: Any) -> Any:
    """An answer as the JSON the peer writes (a pre-encoded fragment read back)."""
    return orjson.loads(orjson.dumps(answer))


def _event(event: HostEvent) -> tuple[Any, ...]:
    assert isinstance(event, MessagesAccepted)
    return (event.server_id, [dict(m) for m in event.messages], set(event.channels), event.last_seq)


def _row(m: StoredMessage) -> tuple[Any, ...]:
    return (
        m.seq,
        m.server_id,
        m.channel_id,
        m.message_id,
        m.thread_id,
        m.author_id,
        m.author_name,
        m.timestamp,
        m.content,
        m.metadata,
        m.tags,
        m.received_at,
    )


def _record(message: dict[str, Any]) -> IncomingRecord:
    author = message["author"]
    return IncomingRecord(
        server_id=SID,
        channel_id=message["channelId"],
        message_id=message["messageId"],
        thread_id=message.get("threadId"),
        author_id=author["id"],
        author_name=author["name"],
        timestamp=message["timestamp"],
        content=message["content"],
        metadata=message.get("metadata"),
        tags=message.get("tags"),
    )


@asynccontextmanager
async def _stores(count: int) -> AsyncIterator[list[MessageStore]]:
    with TemporaryDirectory() as folder:
        async with AsyncExitStack() as stack:
            yield [
                await stack.enter_async_context(await MessageStore.open(Path(folder) / f"{n}.db"))
                for n in range(count)
            ]


def _handler(store: MessageStore, listener: _Recorder) -> IncomingHandler:
    registry = ChannelRegistry()
    registry.register(SID, REGISTERED)
    events = EventBus()
    events.subscribe(listener)
    return IncomingHandler(
        server_id=SID,
        registry=registry,
        store=store,
        events=events,
        clock=lambda: NOW,
        permits=None,
    )


async def _write(
    entry: str, store: MessageStore, batch: Sequence[dict[str, Any]]
) -> Sequence[AppendResult]:
    if entry == "submit_raw":
        raws = [orjson.dumps(m) for m in batch]
        keys = [(SID, m["channelId"], m["messageId"]) for m in batch]
        return await store.submit_raw(keys, RawMessages(raws), received_at=NOW)
    if entry == "submit_wire":
        return await store.submit_wire(SID, list(batch), received_at=NOW)
    records = [_record(m) for m in batch]
    if entry == "submit":
        return await store.submit(records, received_at=NOW)
    return await store.append(records, received_at=NOW)


ENTRIES = ("submit_raw", "submit_wire", "submit", "append")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_both_ingest_loops_and_every_write_entry_store_and_tell_the_same(
    sent: list[list[dict[str, Any]]],
) -> None:
    assert all(incoming_is_valid(m) for batch in sent for m in batch)

    async def run() -> None:
        async with _stores(2 + len(ENTRIES)) as stores:
            general, checked = _Recorder(), _Recorder()
            handlers = (_handler(stores[0], general), _handler(stores[1], checked))
            accepted: list[list[dict[str, Any]]] = []
            for batch in sent:
                frame = orjson.dumps({"messages": batch})
                fast = read_incoming_params(frame)
                assert fast is not None  # the hot path takes every batch here
                plain = await _answer(await handlers[0].handle(orjson.loads(frame)))
                hot = await _answer(await handlers[1].handle(fast))
                assert _plain(plain) == _plain(hot)
                results = _plain(plain)["results"]
                accepted.append([m for m, r in zip(batch, results, strict=True) if r["accepted"]])
            rows = [list(map(_row, await s.read(0, 10_000))) for s in stores[:2]]
            assert rows[0] == rows[1]
            assert list(map(_event, general.events)) == list(map(_event, checked.events))

            written = stores[2:]
            for entry, store in zip(ENTRIES, written, strict=True):
                answers = [await _write(entry, store, b) for b in accepted if b]
                assert [list(a) for a in answers] == [
                    [AppendResult(r.seq, r.duplicate) for r in answers[i]]
                    for i in range(len(answers))
                ]
                assert list(map(_row, await store.read(0, 10_000))) == rows[0], entry
            assert len({s.latest_seq for s in stores}) == 1

    anyio.run(run)
