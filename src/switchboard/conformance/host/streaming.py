"""Host checks of what a host sends on its own: publishes and streams (mcpl-protocol.md 3.3,
4.7, 4.9; H-23, H-33, H-44, H-45, H-47..H-50).

The kit registers a channel and sends a message on it addressed to the agent, then checks what
the host sends: nothing outside the grant, publishes and chunks only to channels this
connection registered, chunk indices rising per inference, one ``complete`` per channel that had
chunks. A host that sends nothing while the check watches leaves it "not exercised".

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, Final

from switchboard.protocol import MCPL_VERSION, Grant

from ..common.outcomes import Verdict, failed, not_exercised, passed
from .channels import descriptor, incoming_message
from .context import HOST_CHECKS, STREAMING, HostContext
from .probes import effective, gate_of, outside_grant
from .session import HostMessage, KitConnector

__all__ = ["provoke"]

_ROOM: Final = "kit-room"
_CHUNK: Final = "channels/outgoing/chunk"
_COMPLETE: Final = "channels/outgoing/complete"
_PUBLISH_NO_STREAMING: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": {"register": True, "incoming": True, "publish": True},
}
_STREAMING: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": {"register": True, "incoming": True, "publish": True, "streaming": True},
}

Stream = tuple[str, str]  # (inferenceId, channelId)


async def provoke(kit: KitConnector, *, text: str = "hello, agent") -> tuple[Grant, set[str]]:
    """Ready the host, register the kit's room, and send one addressed message on it.

    Returns:
        The grant the host stated, and the channel ids it accepted from the kit (all of those
        submitted when the answer is not itemized: that is another check's failure).
    """
    policy = await kit.require_ready()
    reply = await kit.call("channels/register", {"channels": [descriptor(_ROOM)]})
    results = reply.result.get("results") if isinstance(reply.result, Mapping) else None
    if reply.ok and not isinstance(results, list):
        accepted = {_ROOM}
    else:
        accepted = {
            r["id"]
            for r in results or []
            if isinstance(r, Mapping) and r.get("accepted") is True and isinstance(r.get("id"), str)
        }
    message = {**incoming_message(_ROOM, "m-provoke"), "tags": ["chat:mention", "chat:addressed"]}
    message["content"] = [{"type": "text", "text": text}]
    await kit.call("channels/incoming", {"messages": [message]})
    return Grant(effective(policy)), accepted


def _params(message: HostMessage) -> Mapping[str, Any]:
    return message.params if isinstance(message.params, Mapping) else {}


def _streams(messages: Sequence[HostMessage]) -> tuple[dict[Stream, list[HostMessage]], ...]:
    chunks: dict[Stream, list[HostMessage]] = defaultdict(list)
    completes: dict[Stream, list[HostMessage]] = defaultdict(list)
    for m in messages:
        if m.method in (_CHUNK, _COMPLETE):
            p = _params(m)
            key = (str(p.get("inferenceId")), str(p.get("channelId")))
            (chunks if m.method == _CHUNK else completes)[key].append(m)
    return chunks, completes


async def _watch_streams(ctx: HostContext, kit: KitConnector) -> None:
    """Watch for a while; if streams started, give their completes time to arrive."""
    await kit.wait_for(lambda m: False, within=ctx.options.silence)
    chunks, completes = _streams(kit.messages)
    if chunks and not set(chunks) <= set(completes):

        def all_done(_: HostMessage) -> bool:
            now_chunks, now_completes = _streams(kit.messages)
            return set(now_chunks) <= set(now_completes)

        await kit.wait_for(all_done)


@HOST_CHECKS.check(
    "host.grant.nothing_sent_outside_grant",
    requirements=("H-23", "H-33", "H-44", "H-45"),
    level="MUST",
    section=STREAMING,
    title="what the host sends on its own stays inside the grant and the registered channels",
)
async def nothing_sent_outside_grant(ctx: HostContext) -> Verdict:
    async with ctx.launch(_PUBLISH_NO_STREAMING) as kit:
        grant, accepted = await provoke(kit)
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        gated = [m for m in kit.messages if m.after_receipt and gate_of(m) is not None]
        if not gated:
            return not_exercised("the host sent nothing that needs a capability while watched")
        outside = outside_grant(gated, grant)
        if outside:
            return failed(f"sent outside the grant {sorted(grant.leaves())!r}: {outside!r}")
        strays = [
            _params(m).get("channelId")
            for m in gated
            if m.method == "channels/publish" and _params(m).get("channelId") not in accepted
        ]
        if strays:
            return failed(f"channels/publish to channels this connection does not own: {strays!r}")
        return passed(f"{len(gated)} gated message(s), all inside the grant and own channels")


@HOST_CHECKS.check(
    "host.channels.streams_well_formed",
    requirements=("H-47", "H-48", "H-49"),
    level="MUST",
    section=STREAMING,
    title="chunks go to own channels with rising index; one complete per stream that had chunks",
)
async def streams_well_formed(ctx: HostContext) -> Verdict:
    async with ctx.launch(_STREAMING) as kit:
        _, accepted = await provoke(kit)
        await _watch_streams(ctx, kit)
        chunks, completes = _streams(kit.messages)
        if not chunks and not completes:
            return not_exercised("the host streamed nothing to the kit while watched")
        foreign = sorted({channel for _, channel in chunks if channel not in accepted})
        if foreign:
            return failed(f"chunks for channels this connection does not own: {foreign!r}")
        by_inference: dict[str, list[Any]] = defaultdict(list)
        for m in kit.messages:
            if m.method == _CHUNK:
                by_inference[str(_params(m).get("inferenceId"))].append(_params(m).get("index"))
        for inference, indices in by_inference.items():
            rising = all(isinstance(i, int) for i in indices) and all(
                a < b for a, b in pairwise(indices)
            )
            if not rising:
                return failed(f"chunk indices of {inference} are not strictly rising: {indices!r}")
        for stream in sorted(set(chunks) | set(completes)):
            count = len(completes.get(stream, []))
            had_chunks = stream in chunks
            if had_chunks and count != 1:
                return failed(f"stream {stream!r} had chunks and {count} complete(s), not one")
            if not had_chunks and count:
                return failed(f"stream {stream!r} got a complete without any chunk")
        return passed(f"{len(chunks)} stream(s): own channels, rising indices, one complete each")


def _text(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    texts = [b.get("text") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
    return "".join(str(t) for t in texts if t is not None)


@HOST_CHECKS.check(
    "host.channels.complete_matches_chunks",
    requirements=("H-50",),
    level="SHOULD",
    section=STREAMING,
    title="the text of a complete equals its channel's deltas in index order",
)
async def complete_matches_chunks(ctx: HostContext) -> Verdict:
    async with ctx.launch(_STREAMING) as kit:
        await provoke(kit)
        await _watch_streams(ctx, kit)
        chunks, completes = _streams(kit.messages)
        done = sorted(s for s in chunks if completes.get(s))
        if not done:
            return not_exercised("no stream with chunks and a complete arrived while watched")
        for stream in done:
            ordered = sorted(chunks[stream], key=lambda m: _params(m).get("index", 0))
            deltas = "".join(str(_params(m).get("delta", "")) for m in ordered)
            final = _text(_params(completes[stream][0]).get("content"))
            if deltas != final:
                return failed(f"stream {stream!r}: deltas {deltas!r} but complete {final!r}")
        return passed(f"{len(done)} stream(s): each complete equals its deltas")
