"""Server checks of streaming and delivery: only channels/publish delivers (S-33, S-34, S-35).

Stream chunks, ``complete``, typing and lifecycle notifications are advisory
(mcpl-protocol.md 4.9-4.11): a server must never post because of them. The kit cannot see the
server's platform, so it looks for *traces* of delivery on the wire: a unique marker in every
streamed delta that later shows up in anything the server sends; it first publishes for real
to learn whether the server leaves traces at all (if not, "not exercised"). Each check's rule
is its docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from ..common.outcomes import NotExercised, Verdict, fail, not_exercised, passed
from .context import SERVER_CHECKS, STREAMING, ServerContext
from .scenarios import needs, publish_params, ready, wait_channels
from .session import HostSession

__all__: list[str] = []


async def _stream(
    session: HostSession, channel: str, marker: str, indices: tuple[int, ...]
) -> None:
    """Send chunks at ``indices`` and the ``complete`` of one stream carrying ``marker``."""
    base = {
        "inferenceId": f"{marker}-inference",
        "conversationId": "kit-conversation",
        "channelId": channel,
    }
    # Each delta carries the marker, so any part posted on its own shows; the deltas
    # concatenated in index order are the text ``complete`` carries.
    deltas = [f"{marker} part {index}? " for index in indices]
    for index, delta in zip(indices, deltas, strict=True):
        await session.notify("channels/outgoing/chunk", {**base, "index": index, "delta": delta})
    text = "".join(deltas)
    await session.notify(
        "channels/outgoing/complete", {**base, "content": [{"type": "text", "text": text}]}
    )


async def _typing(session: HostSession, channel: str, op: str) -> None:
    if "channels.typing" in session.advertised:
        await session.notify("channels/typing", {"channelId": channel, "op": op})


def _traces(session: HostSession, needles: list[str], after: int) -> list[str]:
    return sorted(
        {
            m.method
            for m in session.messages
            if m.position > after and any(m.mentions(n) for n in needles)
        }
    )


def _own_posts(session: HostSession, after: int) -> int:
    """Incoming messages after ``after`` the server itself tags as its own post."""
    count = 0
    for message in session.messages:
        if message.method != "channels/incoming" or message.position <= after:
            continue
        items = message.params.get("messages") if isinstance(message.params, dict) else None
        for item in items if isinstance(items, list) else ():
            tags = item.get("tags") if isinstance(item, dict) else None
            count += isinstance(tags, list) and "chat:from-self" in tags
    return count


def _delivery_problems(session: HostSession, marker: str, after: int, when: str) -> list[str]:
    problems = [
        f"{method} carried text streamed {when}: it was delivered"
        for method in _traces(session, [marker], after)
    ]
    own = _own_posts(session, after)
    if own:
        problems.append(
            f"{own} incoming messages tagged chat:from-self (the server's own posts) "
            f"followed what the kit sent {when}, and the kit had published nothing"
        )
    return problems


async def _lifecycle(session: HostSession, marker: str, phase: str) -> None:
    await session.notify(
        "inference/lifecycle",
        {
            "inferenceId": f"{marker}-inference",
            "conversationId": "kit-conversation",
            "turnIndex": 0,
            "phase": phase,
        },
    )


async def _channel(session: HostSession) -> str:
    await ready(session)
    channels = await wait_channels(session)
    if not channels:
        raise NotExercised("the server registered no channel to stream to")
    await session.quiet()
    return channels[0]


@SERVER_CHECKS.check(
    "server.channels.no_delivery_side_effect",
    requirements=("S-33", "S-35"),
    level="MUST",
    section=STREAMING,
    title="stream chunks, complete, typing and lifecycle notifications never deliver content",
    applies=needs("channels.publish"),
)
async def no_delivery_side_effect(ctx: ServerContext) -> Verdict:
    """With ``channels.streaming`` granted, typing (when advertised), chunks, ``complete`` (and
    ``inference/lifecycle`` when advertised) leave no trace; without the streaming grant, stray
    chunks and ``complete`` leave none either (S-35).
    """
    streamed, stray, published = ctx.marker("stream"), ctx.marker("stray"), ctx.marker("post")
    async with ctx.connect() as session:
        channel = await _channel(session)
        start = session.link.received
        lifecycle = "inferenceLifecycle" in session.advertised
        if lifecycle:
            await _lifecycle(session, streamed, "started")
        await _typing(session, channel, "start")
        if "channels.streaming" in session.advertised:
            await _stream(session, channel, streamed, (0, 1, 2))
        await _typing(session, channel, "stop")
        if lifecycle:
            await _lifecycle(session, streamed, "completed")
        await session.barrier()
        await session.watch()
        problems = _delivery_problems(session, streamed, start, "with the streaming grant")
        narrowed = sorted(session.advertised - {"channels.streaming"})
        await session.policy(narrowed, enabled=session.set_names())
        cut = session.link.received
        await _stream(session, channel, stray, (0, 1))
        await session.barrier()
        await session.watch()
        problems.extend(_delivery_problems(session, stray, cut, "without a streaming grant"))
        if problems:
            fail("; ".join(problems))
        before_post = session.link.received
        reply = await session.call("channels/publish", publish_params(channel, f"{published}?"))
        needles = [published]
        if (
            reply.ok
            and isinstance(reply.result, dict)
            and isinstance(reply.result.get("messageId"), str)
        ):
            needles.append(reply.result["messageId"])
        found = await session.wait_for(
            lambda m: any(m.mentions(n) for n in needles), after=before_post
        )
    if found is None:
        return not_exercised(
            "a real publish left no trace on the wire, so a stray delivery would not either"
        )
    return passed(f"no trace of streamed text, while a real publish showed up in {found.method}")


@SERVER_CHECKS.check(
    "server.channels.streaming_gaps_tolerated",
    requirements=("S-34",),
    level="MUST",
    section=STREAMING,
    title="gaps in chunk indices are tolerated and complete is taken without error",
    applies=needs("channels.streaming"),
)
async def streaming_gaps_tolerated(ctx: ServerContext) -> Verdict:
    """Chunk indices 0, 5, 9 then ``complete`` raise no error and leave the server answering."""
    marker = ctx.marker()
    async with ctx.connect() as session:
        channel = await _channel(session)
        start = session.link.received
        await _stream(session, channel, marker, (0, 5, 9))
        reply = await session.barrier()
    if reply.failure is not None:
        fail(f"after a stream with gaps the server stopped answering: {reply.failure}")
    errors = [answer for position, answer in session.orphan_answers if position > start]
    if errors:
        fail(f"the server answered the stream notifications with errors: {errors}")
    return passed("chunks 0, 5, 9 and complete taken; the server still answers")
