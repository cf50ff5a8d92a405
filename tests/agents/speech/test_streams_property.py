"""Streamed speech streams, per channel, exactly what the batch parse delivers there (§4.3).

For any text and any way of cutting it into chunks, the chunk text concatenated per
destination equals the delivering segments of ``parse_speech`` concatenated per destination,
with targets resolved by the same registry (H-51: nothing else is ever streamed).
"""

from __future__ import annotations

from itertools import pairwise

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.agents.speech.streams import StreamedSpeech
from switchboard.channels import (
    NO_STICKY,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    Disposition,
    ProseMode,
    Sticky,
    parse_speech,
)
from tests.channels.channels_support import Desc

ATOMS = [
    ">", ">>", ">>>", " ", "\t", "\n", "!", " !", "#room", "#hall", "#news", "general",
    "a:general", "#bad", "skip_reply", "hi", "\u00a0", "é",
]  # fmt: skip

ROOM = ChannelRef("a", "room")


def registry() -> ChannelRegistry:
    reg = ChannelRegistry()
    reg.register(
        "a",
        [
            Desc("room", label="#room"),
            Desc("hall", label="#hall"),
            Desc("news", label="#news", direction="inbound"),
            Desc("general", label="#general-a"),
        ],
    )
    reg.register("b", [Desc("general", label="#general-b")])
    return reg


class Sink:
    """Records every chunk; stands in for an :class:`InferenceStream`."""

    inference_id = "inf"

    def __init__(self) -> None:
        self.chunks: list[tuple[ChannelRef, str]] = []

    async def chunk(self, to: ChannelRef, delta: str) -> bool:
        self.chunks.append((to, delta))
        return True

    async def close(self) -> tuple[ChannelRef, ...]:
        return ()


def target_ref(reg: ChannelRegistry, token: str) -> ChannelRef | None:
    try:
        return reg.names.resolve_prose_target(token, for_speech=True).ref
    except ChannelNameError:
        return None


def batch_per_channel(
    reg: ChannelRegistry, text: str, mode: ProseMode, sticky: Sticky, locus: ChannelRef | None
) -> dict[ChannelRef, str]:
    parsed = parse_speech(
        text, mode=mode, sticky=sticky, resolves=lambda t: target_ref(reg, t) is not None
    )
    out: dict[ChannelRef, str] = {}
    for segment in parsed.segments:
        if not segment.delivers:
            continue
        if segment.route.disposition is Disposition.LOCUS:
            ref = locus
        else:
            ref = target_ref(reg, segment.route.target or "")
        if ref is not None:
            out[ref] = out.get(ref, "") + segment.text
    return out


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = "".join(draw(st.lists(st.sampled_from(ATOMS), max_size=30)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in pairwise(bounds)]


@settings(max_examples=150, deadline=None)
@given(
    chunked(),
    st.sampled_from(list(ProseMode)),
    st.sampled_from([NO_STICKY, Sticky.on("#hall"), Sticky.on("#bad")]),
    st.sampled_from([ROOM, None, ChannelRef("a", "news")]),
)
def test_streamed_text_per_channel_equals_what_the_batch_parse_delivers_there(
    case: tuple[str, list[str]], mode: ProseMode, sticky: Sticky, locus: ChannelRef | None
) -> None:
    text, chunks = case
    reg = registry()
    sink = Sink()
    speech = StreamedSpeech(sink, reg, owner="ann", mode=mode, locus=locus, sticky=sticky)

    async def run() -> str:
        for chunk in chunks:
            await speech.feed(chunk)

        async def deliver(whole: str) -> str:
            return whole

        end = await speech.finish(deliver)
        assert end.delivered is not None
        return end.delivered

    assert anyio.run(run) == text
    streamed: dict[ChannelRef, str] = {}
    for ref, delta in sink.chunks:
        assert delta
        streamed[ref] = streamed.get(ref, "") + delta
    assert streamed == batch_per_channel(reg, text, mode, sticky, locus)
