"""The >> grammar: where prefix lines are, what a head consumes, and how a block is segmented."""

from __future__ import annotations

import pytest

from switchboard.channels.prose.grammar import (
    Head,
    Segment,
    is_blank,
    is_prose_target_token,
    match_head,
    parse_speech,
)
from switchboard.channels.prose.route import Disposition, ProseMode

D = Disposition
Row = tuple[Disposition, str | None, str]


def parts(text: str, mode: ProseMode) -> list[Row]:
    return [(s.route.disposition, s.target, s.text) for s in parse_speech(text, mode=mode).segments]


EXPLICIT_CASES: list[tuple[str, list[Row]]] = [
    # channel-registry.md T17: two deliveries, the second body spans lines and keeps ">> quoted".
    (
        ">>#alpha part one\n>>@laria part two\nline 2\n>> quoted",
        [(D.TARGET, "#alpha", "part one"), (D.TARGET, "@laria", "part two\nline 2\n>> quoted")],
    ),
    (">>#ops ! done", [(D.TARGET, "#ops", "done")]),
    (">>skip_reply\nnotes", [(D.PRIVATE, "skip_reply", "notes")]),
    (">> x", [(D.BOUNCE, None, ">> x")]),
    (">>", [(D.BOUNCE, None, ">>")]),
    (">>\n>>#a x", [(D.BOUNCE, None, ">>"), (D.TARGET, "#a", "x")]),
    (">>#a", [(D.TARGET, "#a", "")]),
    (">>#a\n", [(D.TARGET, "#a", "")]),
    (">>#a\nbody", [(D.TARGET, "#a", "body")]),
    (">>#a   body", [(D.TARGET, "#a", "body")]),
    (">>#a\n\nbody", [(D.TARGET, "#a", "\nbody")]),
    (">>#a\n>>#b", [(D.TARGET, "#a", ""), (D.TARGET, "#b", "")]),
    (">>#a\n\n>>#b y", [(D.TARGET, "#a", ""), (D.TARGET, "#b", "y")]),
    (">>#a x\n", [(D.TARGET, "#a", "x\n")]),
    ("intro\n>>#a x", [(D.BOUNCE, None, "intro"), (D.TARGET, "#a", "x")]),
    ("\n>>#a x", [(D.BOUNCE, None, ""), (D.TARGET, "#a", "x")]),
    (" >>#a x", [(D.BOUNCE, None, " >>#a x")]),
    ("said >>#a inline", [(D.BOUNCE, None, "said >>#a inline")]),
    (">>#a!", [(D.TARGET, "#a!", "")]),
    (">>>#a x", [(D.TARGET, ">#a", "x")]),
    (">>\u00a0#a x", [(D.BOUNCE, None, ">>\u00a0#a x")]),
    (">>#a\u00a0x", [(D.TARGET, "#a", "\u00a0x")]),
    (">>#a\r\nx", [(D.TARGET, "#a", "\r\nx")]),
    ("> quoted\n>>#a x", [(D.BOUNCE, None, "> quoted"), (D.TARGET, "#a", "x")]),
    ("```\n>>#a x\n```", [(D.BOUNCE, None, "```"), (D.TARGET, "#a", "x\n```")]),
    (">>#a x\n>>skip_reply\nnote", [(D.TARGET, "#a", "x"), (D.PRIVATE, "skip_reply", "note")]),
    (">>SKIP_REPLY x", [(D.TARGET, "SKIP_REPLY", "x")]),
    (">>skip_reply! x", [(D.TARGET, "skip_reply!", "x")]),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), EXPLICIT_CASES)
def test_explicit_mode_segments_a_block_at_its_prefix_lines(text: str, expected: list[Row]) -> None:
    assert parts(text, ProseMode.EXPLICIT) == expected


HYBRID_CASES: list[tuple[str, list[Row]]] = [
    (">>>#cafe hello", [(D.TARGET, "#cafe", "hello")]),
    ("  >>>  #cafe hello", [(D.TARGET, "#cafe", "hello")]),
    ("\t>>>\t#cafe ! hi", [(D.TARGET, "#cafe", "hi")]),
    (">>#cafe hello", [(D.LOCUS, None, ">>#cafe hello")]),
    ("hi\n>>>#cafe\nthere", [(D.LOCUS, None, "hi"), (D.TARGET, "#cafe", "there")]),
    (">>>#cafe", [(D.TARGET, "#cafe", "")]),
    (">>>skip_reply\nnote", [(D.PRIVATE, "skip_reply", "note")]),
    (">>> \nx", [(D.LOCUS, None, ">>> \nx")]),
    (">>>", [(D.LOCUS, None, ">>>")]),
    ("a >>>#cafe b", [(D.LOCUS, None, "a >>>#cafe b")]),
    (">>>>x y", [(D.TARGET, ">x", "y")]),
]


@pytest.mark.parametrize(("text", "expected"), HYBRID_CASES)
def test_hybrid_mode_routes_only_triple_arrow_envelopes(text: str, expected: list[Row]) -> None:
    assert parts(text, ProseMode.HYBRID) == expected


@pytest.mark.parametrize("text", [">>#a hi\nmore", "plain", ">>>#a x", "\n"])
def test_locus_mode_sends_the_whole_block_to_the_locus_with_prefixes_as_plain_text(
    text: str,
) -> None:
    assert parts(text, ProseMode.LOCUS) == [(D.LOCUS, None, text)]


@pytest.mark.parametrize("text", [">>#a hi", "plain", ">>skip_reply x"])
def test_disabled_mode_withholds_the_whole_block_and_ignores_prefixes(text: str) -> None:
    assert parts(text, ProseMode.DISABLED) == [(D.WITHHELD, None, text)]


def test_the_continue_modifier_is_whitespace_then_a_bang_right_after_the_target() -> None:
    flags = {
        text: [s.continue_ for s in parse_speech(text, mode=ProseMode.EXPLICIT).segments]
        for text in [">>#ops ! done", ">>#ops\t!", ">>#ops !!", ">>#ops! x", ">>#ops x !"]
    }
    assert flags == {
        ">>#ops ! done": [True],
        ">>#ops\t!": [True],
        ">>#ops !!": [True],
        ">>#ops! x": [False],
        ">>#ops x !": [False],
    }


def test_a_block_asks_for_a_rewake_when_any_of_its_prefixes_does() -> None:
    assert parse_speech(">>#a x\n>>#b ! y", mode=ProseMode.EXPLICIT).continue_
    assert not parse_speech(">>#a x\n>>#b y", mode=ProseMode.EXPLICIT).continue_


def test_each_segment_keeps_its_head_as_written_so_the_block_can_be_rebuilt() -> None:
    text = "intro\n>>#a !\nbody\n  >>  #no\n>>#b tail"
    result = parse_speech(text, mode=ProseMode.EXPLICIT)
    assert [s.prefix for s in result.segments] == ["", ">>#a !\n", ">>#b "]
    assert [s.explicit for s in result.segments] == [False, True, True]
    assert "\n".join(s.prefix + s.text for s in result.segments) == text


def test_a_segment_delivers_only_when_its_route_delivers_and_its_body_is_not_blank() -> None:
    segments = parse_speech(">>#a \n \t\n>>#b x\n>>skip_reply y", mode=ProseMode.EXPLICIT).segments
    assert [s.delivers for s in segments] == [False, True, False]


@pytest.mark.parametrize(
    ("line", "mode", "head"),
    [
        (">>#a x", ProseMode.EXPLICIT, Head("#a", False, 5)),
        (">>#a ! x", ProseMode.EXPLICIT, Head("#a", True, 7)),
        (">> #a", ProseMode.EXPLICIT, None),
        (">>>#a x", ProseMode.HYBRID, Head("#a", False, 6)),
        (" >>> #a", ProseMode.HYBRID, Head("#a", False, 7)),
        (">>#a x", ProseMode.HYBRID, None),
        (">>#a x", ProseMode.LOCUS, None),
        (">>#a x", ProseMode.DISABLED, None),
    ],
)
def test_a_head_is_matched_only_where_the_mode_has_prefixes(
    line: str, mode: ProseMode, head: Head | None
) -> None:
    assert match_head(line, mode) == head


@pytest.mark.parametrize(
    ("token", "ok"),
    [
        ("#general", True),
        ("z:skip_reply", True),
        ("skip_reply", False),
        ("", False),
        ("two words", False),
        ("tab\there", False),
        ("nb\u00a0sp", False),
        ("bom\ufeff", False),
        ("@laria", True),
    ],
)
def test_a_target_token_is_one_run_of_non_whitespace_other_than_skip_reply(
    token: str, ok: bool
) -> None:
    assert is_prose_target_token(token) is ok


def test_blankness_uses_the_javascript_whitespace_set() -> None:
    assert is_blank("")
    assert is_blank(" \t\n\u3000\ufeff\u2028")
    assert not is_blank("\x1c")  # Python calls it whitespace; JavaScript does not
    assert not is_blank(" x ")


def test_segments_expose_their_route_fields_by_name() -> None:
    (segment,) = parse_speech(">>#ops ! done", mode=ProseMode.EXPLICIT).segments
    assert isinstance(segment, Segment)
    assert (segment.target, segment.continue_, segment.explicit, segment.private) == (
        "#ops",
        True,
        True,
        False,
    )
