"""Host checks of channels (mcpl-protocol.md 4.3-4.9; H-38..H-43, H-46, H-52, H-56).

What this module knows: that ``channels/register`` and ``channels/changed`` Requests are
answered item by item (a malformed or unknown item rejected alone, with a reason), and that a
``channels/changed`` Notification, which cannot carry results, is still filtered item by item;
that ``channels/incoming`` is checked per message against the channels actually registered,
with one result per message in a batch, and that tags no ontology describes do not fail it;
that ``channels/list`` is answered; and that no ``channels/outgoing/*`` ever reaches a
connector that did not advertise ``channels.streaming``.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..common.outcomes import Verdict, fail, failed, not_exercised, passed
from ..common.reply import Reply
from .context import CHANNELS, HOST_CHECKS, HostContext
from .session import KitConnector

__all__ = ["descriptor", "incoming_message", "itemized"]

_STREAM_METHODS: Final = frozenset({"channels/outgoing/chunk", "channels/outgoing/complete"})


def descriptor(channel_id: str) -> dict[str, Any]:
    """A well-formed channel descriptor."""
    return {"id": channel_id, "type": "chat", "label": channel_id, "direction": "bidirectional"}


def incoming_message(channel_id: str, message_id: str) -> dict[str, Any]:
    """A well-formed incoming message on ``channel_id``."""
    return {
        "channelId": channel_id,
        "messageId": message_id,
        "author": {"id": "kit-user", "name": "Kit User"},
        "timestamp": "2026-01-01T00:00:00Z",
        "content": [{"type": "text", "text": "hello from the conformance kit"}],
    }


def itemized(reply: Reply, ids: Sequence[str], key: str = "id") -> dict[str, Mapping[str, Any]]:
    """The per-item results of ``reply`` by ``key``, one per id in ``ids``.

    Raises:
        CheckFailed: no result, or not exactly one item per submitted id.
    """
    if not reply.ok:
        fail(f"{reply.method} got {reply.describe()}, not an itemized result")
    results = reply.result.get("results") if isinstance(reply.result, Mapping) else None
    if not isinstance(results, list) or not all(isinstance(r, Mapping) for r in results):
        fail(f"{reply.method} result has no results list: {reply.result!r}")
    by_id = {r.get(key): r for r in results}
    if len(results) != len(ids) or set(by_id) != set(ids):
        fail(f"{reply.method} results {results!r} are not one per submitted {key} {list(ids)!r}")
    for item in results:
        if not isinstance(item.get("accepted"), bool):
            fail(f"{reply.method} item {item!r} has no boolean accepted")
        if item["accepted"] is False and not isinstance(item.get("reason"), str):
            fail(f"{reply.method} rejected item {item!r} carries no reason")
    return by_id


async def _ready(kit: KitConnector) -> None:
    await kit.require_ready()


@HOST_CHECKS.check(
    "host.channels.register_itemized",
    requirements=("H-38",),
    level="MUST",
    section=CHANNELS,
    title="channels/register is answered per descriptor; a malformed one is rejected alone",
)
async def register_itemized(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        malformed = {"id": "kit-bad", "type": "chat"}  # no label, no direction
        reply = await kit.call(
            "channels/register",
            {"channels": [descriptor("kit-a"), malformed, descriptor("kit-b")]},
        )
        by_id = itemized(reply, ["kit-a", "kit-bad", "kit-b"])
        wrong = [i for i in ("kit-a", "kit-b") if by_id[i]["accepted"] is not True]
        if wrong or by_id["kit-bad"]["accepted"] is not False:
            return failed(f"expected only kit-bad rejected, got {list(by_id.values())!r}")
        return passed("three descriptors, three results; only the malformed one rejected")


@HOST_CHECKS.check(
    "host.channels.changed_request_itemized",
    requirements=("H-39",),
    level="MUST",
    section=CHANNELS,
    title="a channels/changed Request is itemized; updating an unregistered channel is refused",
)
async def changed_request_itemized(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        await kit.call("channels/register", {"channels": [descriptor("kit-a")]})
        reply = await kit.call(
            "channels/changed",
            {"updated": [descriptor("kit-a"), descriptor("kit-never-registered")]},
        )
        by_id = itemized(reply, ["kit-a", "kit-never-registered"])
        if by_id["kit-never-registered"]["accepted"] is not False:
            return failed("an update of a channel that was never registered was accepted")
        if by_id["kit-a"]["accepted"] is not True:
            return failed(f"the update of a registered channel was refused: {by_id['kit-a']!r}")
        return passed("the unregistered channel alone was refused")


@HOST_CHECKS.check(
    "host.channels.incoming_needs_registration",
    requirements=("H-41",),
    level="MUST",
    section=CHANNELS,
    title="channels/incoming on a channel never registered is refused per message",
)
async def incoming_needs_registration(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        reply = await kit.call(
            "channels/incoming", {"messages": [incoming_message("kit-unknown", "m-1")]}
        )
        if reply.code in (-32023, -32017):
            return passed(f"the whole call was refused with {reply.code}")
        by_id = itemized(reply, ["m-1"], key="messageId")
        if by_id["m-1"]["accepted"] is not False:
            return failed("a message on an unregistered channel was accepted")
        return passed("the message on an unregistered channel was refused")


@HOST_CHECKS.check(
    "host.channels.list_answered",
    requirements=("H-52",),
    level="MUST",
    section=CHANNELS,
    title="channels/list gets a result or an error",
)
async def list_answered(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        reply = await kit.call("channels/list", {})
        if reply.failure is not None:
            return failed(reply.failure)
        return passed(f"channels/list answered: {reply.describe()}")


@HOST_CHECKS.check(
    "host.channels.no_streaming_undeclared",
    requirements=("H-46",),
    level="MUST",
    section=CHANNELS,
    title="no channels/outgoing/* reaches a connector without channels.streaming",
)
async def no_streaming_undeclared(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        await kit.call("channels/register", {"channels": [descriptor("kit-room")]})
        await kit.call("channels/incoming", {"messages": [incoming_message("kit-room", "m-1")]})
        published = await kit.wait_for(
            lambda m: m.method in _STREAM_METHODS or m.method == "channels/publish",
            within=ctx.options.silence,
        )
        streamed = [m.method for m in kit.messages if m.method in _STREAM_METHODS]
        if streamed:
            return failed(f"sent to a connector without channels.streaming: {streamed!r}")
        if published is None:
            return not_exercised("the host published nothing to the kit's channel")
        return passed("the host published without streaming")


@HOST_CHECKS.check(
    "host.channels.changed_notification_filtered",
    requirements=("H-40",),
    level="MUST",
    section=CHANNELS,
    title="a channels/changed Notification is filtered item by item: the good channel works",
)
async def changed_notification_filtered(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        malformed = {"id": "kit-bad", "type": "chat"}  # no label, no direction
        await kit.notify("channels/changed", {"added": [descriptor("kit-good"), malformed]})
        await kit.call("ping", {})  # the notification has been read before this answer
        good = await kit.call(
            "channels/incoming", {"messages": [incoming_message("kit-good", "m-good")]}
        )
        bad = await kit.call(
            "channels/incoming", {"messages": [incoming_message("kit-bad", "m-bad")]}
        )
        if bad.code not in (-32023, -32017):
            by_id = itemized(bad, ["m-bad"], key="messageId")
            if by_id["m-bad"]["accepted"] is not False:
                return failed("a message on the Notification's malformed channel was admitted")
        by_id = itemized(good, ["m-good"], key="messageId")
        if by_id["m-good"]["accepted"] is not True:
            return failed(f"the Notification's good channel does not work: {good.describe()}")
        return passed("the malformed item was filtered out alone; the good channel admits messages")


@HOST_CHECKS.check(
    "host.channels.incoming_result_per_message",
    requirements=("H-43", "H-56"),
    level="MUST",
    section=CHANNELS,
    title="a channels/incoming batch gets one result per message; undescribed tags are fine",
)
async def incoming_result_per_message(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await _ready(kit)
        await kit.call("channels/register", {"channels": [descriptor("kit-room")]})
        tagged = {
            **incoming_message("kit-room", "m-1"),
            "tags": ["kit:undescribed", "vendor:x=1", "chat:mention"],
        }
        reply = await kit.call(
            "channels/incoming", {"messages": [tagged, incoming_message("kit-unknown", "m-2")]}
        )
        by_id = itemized(reply, ["m-1", "m-2"], key="messageId")
        if by_id["m-1"]["accepted"] is not True:
            return failed(f"the message on the registered channel was refused: {by_id['m-1']!r}")
        if by_id["m-2"]["accepted"] is not False:
            return failed("the message on a channel never registered was admitted")
        return passed("two messages, two results, mixed; undescribed tags did not fail the call")
