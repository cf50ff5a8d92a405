"""Properties of the prose grammar and its streaming router, over generated text and chunkings."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from switchboard.channels.prose.grammar import match_head, parse_speech
from switchboard.channels.prose.route import (
    BLOCKED_STICKY,
    NO_STICKY,
    ProseMode,
    Route,
    Sticky,
)
from switchboard.channels.prose.stream import Piece, StreamingRouter

# Pieces chosen to hit every edge of the grammar: arrows, spaces and tabs, the continue bang,
# newlines, other whitespace, skip_reply, targets that resolve and targets that do not.
ATOMS = [
    ">", ">>", ">>>", " ", "\t", "\n", "!", " !", "#a", "#bad", "@x", "skip_reply", "hi",
    "\u00a0", "\r", "\ufeff", "{{unsent}}", "é",
]  # fmt: skip

texts = st.lists(st.sampled_from(ATOMS), max_size=40).map("".join)
modes = st.sampled_from(list(ProseMode))
stickies = st.sampled_from([NO_STICKY, BLOCKED_STICKY, Sticky.on("#a"), Sticky.on("#bad")])


def resolves(token: str) -> bool:
    return "bad" not in token


def delivered(text: str, mode: ProseMode, sticky: Sticky) -> dict[int, tuple[Route, str]]:
    segments = parse_speech(text, mode=mode, sticky=sticky, resolves=resolves).segments
    return {i: (s.route, s.text) for i, s in enumerate(segments) if s.delivers}


def grouped(pieces: list[Piece]) -> dict[int, tuple[Route, str]]:
    out: dict[int, tuple[Route, str]] = {}
    for piece in pieces:
        route, text = out.get(piece.segment, (piece.route, ""))
        assert route == piece.route, "one segment's pieces share one route"
        out[piece.segment] = (route, text + piece.text)
    return out


def run(router: StreamingRouter, chunks: list[str]) -> list[Piece]:
    pieces = [p for chunk in chunks for p in router.feed(chunk)]
    return pieces + router.finish()


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(texts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in pairwise(bounds)]


@given(texts, modes, stickies)
def test_segments_rejoin_to_the_input_with_their_heads_put_back(
    text: str, mode: ProseMode, sticky: Sticky
) -> None:
    segments = parse_speech(text, mode=mode, sticky=sticky, resolves=resolves).segments
    assert "\n".join(s.prefix + s.text for s in segments) == text


@given(texts, modes)
def test_parsing_only_removes_heads_and_never_loses_or_duplicates_body_text(
    text: str, mode: ProseMode
) -> None:
    segments = parse_speech(text, mode=mode).segments
    for segment in segments:
        head = segment.prefix.removesuffix("\n")
        if segment.prefix:
            found = match_head(head, mode)
            assert found is not None
            assert found.length == len(head)
        else:
            assert not segment.route.explicit
    bodies = "".join(s.text for s in segments)
    heads = "".join(s.prefix for s in segments)
    assert len(bodies) + len(heads) + max(len(segments) - 1, 0) == len(text)
    # A body never swallows a prefix line: only a head's own line may continue into it.
    for segment in segments:
        whole_lines = segment.text.split("\n")[0 if segment.prefix.endswith("\n") else 1 :]
        if not segment.prefix and segment is segments[0]:
            whole_lines = segment.text.split("\n")
        assert all(match_head(line, mode) is None for line in whole_lines)


@given(chunked(), modes, stickies)
def test_the_stream_emits_exactly_what_the_batch_parse_delivers_for_every_chunking(
    case: tuple[str, list[str]], mode: ProseMode, sticky: Sticky
) -> None:
    text, chunks = case
    asked_batch: list[str] = []
    asked_stream: list[str] = []

    def recording(into: list[str]) -> Callable[[str], bool]:
        def check(token: str) -> bool:
            into.append(token)
            return resolves(token)

        return check

    batch = parse_speech(text, mode=mode, sticky=sticky, resolves=recording(asked_batch))
    router = StreamingRouter(mode, sticky=sticky, resolves=recording(asked_stream))
    pieces = run(router, chunks)
    assert all(p.text and p.route.delivers for p in pieces)
    expected = {i: (s.route, s.text) for i, s in enumerate(batch.segments) if s.delivers}
    assert grouped(pieces) == expected
    assert router.sticky == batch.sticky
    assert asked_stream == asked_batch


@given(texts, texts, texts, modes, stickies)
def test_nothing_emitted_so_far_depends_on_text_not_yet_seen(
    head: str, tail_one: str, tail_two: str, mode: ProseMode, sticky: Sticky
) -> None:
    router = StreamingRouter(mode, sticky=sticky, resolves=resolves)
    early = grouped(router.feed(head))
    for tail in (tail_one, tail_two):
        final = delivered(head + tail, mode, sticky)
        for index, (route, text) in early.items():
            assert index in final
            assert final[index][0] == route
            assert final[index][1].startswith(text)
