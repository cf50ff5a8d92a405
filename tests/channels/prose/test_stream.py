"""The streaming router: what leaves when, and what is held until its destination is decided."""

from __future__ import annotations

import pytest

from switchboard.channels.prose.grammar import parse_speech
from switchboard.channels.prose.route import (
    BLOCKED_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
)
from switchboard.channels.prose.stream import Piece, StreamingRouter

D = Disposition
ALPHA = Sticky.on("#alpha")
TO_ALPHA = Route(D.TARGET, "#alpha")


def texts(pieces: list[Piece]) -> list[tuple[int, str]]:
    return [(p.segment, p.text) for p in pieces]


def test_locus_mode_passes_text_through_as_it_arrives() -> None:
    router = StreamingRouter(ProseMode.LOCUS)
    assert router.feed("hel") == [Piece(0, Route(D.LOCUS), "hel")]
    assert texts(router.feed("lo\n>>#a x")) == [(0, "lo\n>>#a x")]
    assert router.finish() == []


def test_a_line_that_could_be_a_prefix_is_held_until_a_character_rules_it_out() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT, sticky=ALPHA)
    assert texts(router.feed("hi\n>")) == [(0, "hi")]
    assert router.feed(">") == []
    assert texts(router.feed(" quoted")) == [(0, "\n>> quoted")]


def test_the_newline_before_a_prefix_line_never_leaves() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT, sticky=ALPHA)
    assert texts(router.feed("hi\n")) == [(0, "hi")]
    assert router.feed(">>#beta") == []
    assert router.feed(" there\n") == [Piece(1, Route(D.TARGET, "#beta", explicit=True), "there")]
    assert texts(router.feed("more")) == [(1, "\nmore")]
    assert router.finish() == []


def test_explicit_mode_emits_nothing_before_the_first_prefix_fail_closed() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT)
    assert router.feed("thinking out loud\nstill") == []
    assert texts(router.feed("\n>>#alpha now")) == [(1, "now")]


def test_text_after_an_unresolved_target_or_skip_reply_is_never_emitted() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT, resolves=lambda token: token == "#alpha")
    assert router.feed(">>#typo lost\n>>skip_reply private\n") == []
    assert texts(router.feed(">>#alpha ok")) == [(2, "ok")]
    assert router.finish() == []
    assert router.sticky == ALPHA


def test_the_target_is_resolved_only_when_its_head_ends() -> None:
    asked: list[str] = []

    def resolves(token: str) -> bool:
        asked.append(token)
        return True

    router = StreamingRouter(ProseMode.EXPLICIT, resolves=resolves)
    assert router.feed(">>#al") == []
    assert asked == []
    assert router.feed("pha") == []
    assert texts(router.feed(" hi")) == [(0, "hi")]
    assert asked == ["#alpha"]


def test_the_continue_modifier_is_known_before_any_body_leaves() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT)
    assert router.feed(">>#ops ") == []
    assert router.feed("!") == []
    (piece,) = router.feed(" done")
    assert piece.route == Route(D.TARGET, "#ops", continue_=True, explicit=True)


def test_leading_whitespace_waits_for_the_segment_s_first_other_character() -> None:
    router = StreamingRouter(ProseMode.LOCUS)
    assert router.feed("  \n\t") == []
    assert texts(router.feed("x")) == [(0, "  \n\tx")]


def test_a_blank_segment_emits_nothing_at_all() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT)
    assert router.feed(">>#alpha \n  \n") == []
    assert router.finish() == []


def test_finish_releases_held_arrows_as_body() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT, sticky=ALPHA)
    assert texts(router.feed("a\n>>")) == [(0, "a")]
    assert texts(router.finish()) == [(0, "\n>>")]


def test_a_head_with_no_body_at_the_end_delivers_nothing_but_moves_the_sticky_target() -> None:
    router = StreamingRouter(ProseMode.HYBRID)
    assert router.feed("hello\n>>>#cafe") == [Piece(0, Route(D.LOCUS), "hello")]
    assert router.finish() == []
    assert router.sticky == Sticky.on("#cafe")


def test_a_trailing_newline_of_the_last_body_leaves_at_finish() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT, sticky=ALPHA)
    assert texts(router.feed("line\n")) == [(0, "line")]
    assert texts(router.finish()) == [(0, "\n")]


def test_hybrid_prose_goes_to_the_locus_until_an_envelope_takes_over() -> None:
    router = StreamingRouter(ProseMode.HYBRID)
    out = router.feed("to the room\n  >>>  #cafe ") + router.feed("to the cafe")
    assert out == [
        Piece(0, Route(D.LOCUS), "to the room"),
        Piece(1, Route(D.TARGET, "#cafe", explicit=True), "to the cafe"),
    ]


def test_hybrid_prose_after_a_blocked_sticky_target_is_not_sent_to_the_locus() -> None:
    router = StreamingRouter(ProseMode.HYBRID, sticky=BLOCKED_STICKY)
    assert router.feed("not for the room") == []


def test_disabled_mode_never_emits() -> None:
    router = StreamingRouter(ProseMode.DISABLED)
    assert router.feed(">>#alpha hi\nmore") == []
    assert router.finish() == []


def test_the_worked_example_fed_one_character_at_a_time_matches_the_batch_parse() -> None:
    text = ">>#alpha part one\n>>@laria part two\nline 2\n>> quoted"
    router = StreamingRouter(ProseMode.EXPLICIT)
    pieces = [p for ch in text for p in router.feed(ch)] + router.finish()
    joined: dict[int, str] = {}
    for p in pieces:
        joined[p.segment] = joined.get(p.segment, "") + p.text
    batch = parse_speech(text, mode=ProseMode.EXPLICIT).segments
    assert joined == {i: s.text for i, s in enumerate(batch)}
    assert joined == {0: "part one", 1: "part two\nline 2\n>> quoted"}


def test_one_feed_gives_one_piece_per_segment() -> None:
    router = StreamingRouter(ProseMode.EXPLICIT)
    pieces = router.feed(">>#a 1\n2\n3\n>>#b 4\n5\n>")
    assert texts(pieces) == [(0, "1\n2\n3"), (1, "4\n5")]
    assert texts(router.feed("6")) == [(1, "\n>6")]


def test_a_finished_router_refuses_more_text() -> None:
    router = StreamingRouter(ProseMode.LOCUS)
    router.finish()
    with pytest.raises(RuntimeError, match="finished"):
        router.feed("late")
    with pytest.raises(RuntimeError, match="finished"):
        router.finish()
