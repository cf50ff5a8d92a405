"""Server checks of the channel methods (mcpl-protocol.md 4.2-4.8; S-25 .. S-32).

The kit plays the host and reads what the server sends and how it answers; each check's rule is
its docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from typing import Any

from ..common.outcomes import NotExercised, Verdict, fail, not_exercised, passed
from ..common.shapes import descriptor_problems, incoming_problems
from .context import CHANNELS, SERVER_CHECKS, ServerContext
from .scenarios import needs, observe_traffic, provoke, publish_params, ready, wait_channels
from .session import HostSession, ServerMessage

__all__: list[str] = []


def _descriptors(message: ServerMessage) -> list[Any]:
    params = message.params if isinstance(message.params, dict) else {}
    key = "channels" if message.method == "channels/register" else "added"
    items = params.get(key)
    return items if isinstance(items, list) else []


def _not_request(messages: list[ServerMessage]) -> list[str]:
    return sorted({f"{m.method} sent as a Notification" for m in messages if not m.is_request})


@SERVER_CHECKS.check(
    "server.channels.register_request_form",
    requirements=("S-25",),
    level="MUST",
    section=CHANNELS,
    title="channels/register is a Request with well-formed descriptors and unique ids",
    applies=needs("channels.register"),
)
async def register_request_form(ctx: ServerContext) -> Verdict:
    """``channels/register`` is a Request with one well-formed descriptor per channel and unique
    ids.
    """
    async with ctx.connect() as session:
        await ready(session)
        await wait_channels(session)
    registers = [m for m in session.messages if m.method == "channels/register"]
    if not registers:
        return not_exercised("the server registered no channels")
    problems = _not_request(registers)
    for message in registers:
        items = _descriptors(message)
        if not items:
            problems.append("channels/register without a channels array of descriptors")
        problems.extend(p for item in items for p in descriptor_problems(item))
        ids = [i.get("id") for i in items if isinstance(i, dict)]
        if len(ids) != len(set(map(str, ids))):
            problems.append(f"duplicate ids in one registration: {ids!r}")
    if problems:
        fail("; ".join(problems))
    count = sum(len(_descriptors(m)) for m in registers)
    return passed(f"{len(registers)} registration Requests, {count} well-formed descriptors")


def _incoming_for(session: HostSession, channel_id: str) -> list[ServerMessage]:
    found = []
    for message in session.messages:
        if message.method != "channels/incoming" or not isinstance(message.params, dict):
            continue
        items = message.params.get("messages")
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("channelId") == channel_id:
                found.append(message)
    return found


@SERVER_CHECKS.check(
    "server.channels.itemized_rejection_honoured",
    requirements=("S-26",),
    level="MUST",
    section=CHANNELS,
    title="a descriptor the host refused is never used",
    applies=needs("channels.register"),
)
async def itemized_rejection_honoured(ctx: ServerContext) -> Verdict:
    """When the kit refuses one descriptor (listing the itemized results in reverse order, which a
    server matching them by ``id`` does not notice), the server sends no incoming message for it and
    answers a publish to it with ``-32023`` or ``-32017``.
    """
    marker = ctx.marker()
    async with ctx.connect() as session:
        session.host.reject_first = True
        session.host.reverse_results = True
        await ready(session)
        await wait_channels(session)
        if not session.host.rejected:
            return not_exercised("the server registered no channels to refuse")
        refused = next(iter(session.host.rejected))
        await provoke(session, marker)
        await session.quiet()
        problems = []
        if _incoming_for(session, refused):
            problems.append(f"channels/incoming for {refused!r}, which the host refused")
        probed = "channels.publish" in session.advertised
        if probed:
            reply = await session.call("channels/publish", publish_params(refused, marker))
            if reply.ok or reply.code not in (-32023, -32017):
                problems.append(
                    f"a publish to the refused {refused!r} got {reply.describe()}, "
                    "expected -32023 or -32017"
                )
    if problems:
        fail("; ".join(problems))
    return passed(f"{refused!r} stayed unused" + (" and unknown to publish" if probed else ""))


@SERVER_CHECKS.check(
    "server.channels.changed_request_form",
    requirements=("S-27",),
    level="MUST",
    section=CHANNELS,
    title="channels/changed is sent as a Request",
    applies=needs("channels.register"),
)
async def changed_request_form(ctx: ServerContext) -> Verdict:
    """``channels/changed``, when sent, is a Request."""
    async with ctx.connect() as session:
        await observe_traffic(session, ctx.marker())
    changes = [m for m in session.messages if m.method == "channels/changed"]
    if not changes:
        return not_exercised("the server sent no channels/changed")
    problems = _not_request(changes)
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(changes)} channels/changed, all Requests")


async def _incoming(session: HostSession, marker: str) -> list[ServerMessage]:
    """Incoming messages, spontaneous or provoked by a published question."""
    await ready(session)
    await wait_channels(session)

    def is_incoming(m: ServerMessage) -> bool:
        return m.method == "channels/incoming"

    if await session.wait_for(is_incoming, within=session.options.quiet) is None:
        position = session.link.received
        await provoke(session, marker)
        await session.wait_for(is_incoming, after=position)
    await session.quiet()
    return [m for m in session.messages if m.method == "channels/incoming"]


@SERVER_CHECKS.check(
    "server.channels.incoming_is_request",
    requirements=("S-28",),
    level="MUST",
    section=CHANNELS,
    title="channels/incoming is a Request carrying complete messages",
    applies=needs("channels.incoming"),
)
async def incoming_is_request(ctx: ServerContext) -> Verdict:
    """``channels/incoming`` is a Request whose messages carry every required member, and the server
    goes on after the itemized answer.
    """
    async with ctx.connect() as session:
        incoming = await _incoming(session, ctx.marker())
        if not incoming:
            return not_exercised("the server sent no channels/incoming, even when asked a question")
        after = await session.barrier()
    problems = _not_request(incoming)
    for message in incoming:
        items = message.params.get("messages") if isinstance(message.params, dict) else None
        if not isinstance(items, list) or not items:
            problems.append("channels/incoming without a non-empty messages array")
            continue
        problems.extend(p for item in items for p in incoming_problems(item))
    if after.failure is not None:
        problems.append(f"after the itemized answer the server stopped answering: {after.failure}")
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(incoming)} channels/incoming Requests, complete messages")


async def _publish_channel(session: HostSession) -> str:
    await ready(session)
    channels = await wait_channels(session)
    if not channels:
        raise NotExercised("the server registered no channel to publish to")
    return channels[0]


@SERVER_CHECKS.check(
    "server.channels.publish_delivers",
    requirements=("S-29",),
    level="MUST",
    section=CHANNELS,
    title="a publish Request answers delivered true with a messageId",
    applies=needs("channels.publish"),
)
async def publish_delivers(ctx: ServerContext) -> Verdict:
    """A publish Request to a registered channel answers ``{delivered: true, messageId}``; the
    Notification form is taken without an answer.
    """
    marker = ctx.marker()
    async with ctx.connect() as session:
        channel = await _publish_channel(session)
        reply = await session.call("channels/publish", publish_params(channel, f"{marker}: hi"))
        await session.notify("channels/publish", publish_params(channel, f"{marker}: note"))
        after = await session.barrier()
    result = reply.result if isinstance(reply.result, dict) else {}
    if not reply.ok or result.get("delivered") is not True:
        fail(f"a publish Request to {channel!r} got {reply.describe()}")
    message_id = result.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        fail(f"delivered true without a messageId: {reply.describe()}")
    if after.failure is not None:
        fail(f"after a publish Notification the server stopped answering: {after.failure}")
    return passed(f"delivered as {message_id!r}; the Notification form was taken quietly")


@SERVER_CHECKS.check(
    "server.channels.publish_unknown_channel",
    requirements=("S-30",),
    level="MUST",
    section=CHANNELS,
    title="publishing to an unknown channel is answered -32023",
    applies=needs("channels.publish"),
)
async def publish_unknown_channel(ctx: ServerContext) -> Verdict:
    """Publishing to an unknown channel is ``-32023``."""
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        await wait_channels(session)
        unknown = f"{marker}:nowhere"
        reply = await session.call("channels/publish", publish_params(unknown, marker))
    if reply.code != -32023:
        fail(f"a publish to the unknown channel {unknown!r} got {reply.describe()}")
    return passed("-32023 for an unknown channel")


@SERVER_CHECKS.check(
    "server.channels.open",
    requirements=("S-31",),
    level="MUST",
    section=CHANNELS,
    title="channels/open returns the descriptor, and an error for a channel it cannot open",
    applies=needs("channels.lifecycle"),
)
async def open_channel(ctx: ServerContext) -> Verdict:
    """And ``server.channels.close``: ``{channel}`` (the descriptor of the channel named, not
    another) and ``{closed: true}`` for a registered channel, errors for an unknown one.
    """
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        channels = await wait_channels(session)
        opened = None
        if channels:
            descriptor = session.host.channels[channels[0]]
            params = {"channelId": channels[0], "type": descriptor.get("type")}
            if isinstance(descriptor.get("address"), dict):
                params["address"] = descriptor["address"]
            opened = await session.call("channels/open", params)
        bogus = {"channelId": f"{marker}:nowhere", "type": "kit", "address": {"kit": marker}}
        refused = await session.call("channels/open", bogus)
    problems = []
    if opened is not None:
        channel = opened.result.get("channel") if isinstance(opened.result, dict) else None
        if not opened.ok or channel is None:
            problems.append(f"opening {channels[0]!r} got {opened.describe()}, not {{channel}}")
        else:
            problems.extend(descriptor_problems(channel))
            got = channel.get("id") if isinstance(channel, dict) else None
            if got != channels[0]:
                problems.append(f"opening {channels[0]!r} returned the descriptor of {got!r}")
    if refused.ok or refused.code not in (-32023, -32024):
        problems.append(f"opening an unknown channel got {refused.describe()}")
    if problems:
        fail("; ".join(problems))
    what = f"{channels[0]!r} opened; " if opened is not None else ""
    return passed(f"{what}an unknown channel refused with {refused.code}")


@SERVER_CHECKS.check(
    "server.channels.close",
    requirements=("S-32",),
    level="MUST",
    section=CHANNELS,
    title="channels/close answers closed true, and -32023 for an unknown id",
    applies=needs("channels.lifecycle"),
)
async def close_channel(ctx: ServerContext) -> Verdict:
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        channels = await wait_channels(session)
        closed = None
        if channels:
            closed = await session.call("channels/close", {"channelId": channels[0]})
        unknown = await session.call("channels/close", {"channelId": f"{marker}:nowhere"})
    problems = []
    if closed is not None and not (
        isinstance(closed.result, dict) and closed.result.get("closed") is True
    ):
        problems.append(f"closing {channels[0]!r} got {closed.describe()}")
    if unknown.code != -32023:
        problems.append(f"closing an unknown channel got {unknown.describe()}, expected -32023")
    if problems:
        fail("; ".join(problems))
    return passed(("closed true; " if closed is not None else "") + "-32023 for an unknown id")
