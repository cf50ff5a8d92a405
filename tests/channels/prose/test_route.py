"""Modes and the sticky target: where each segment goes, block after block, within one turn."""

from __future__ import annotations

import pytest

from switchboard.channels.prose.grammar import parse_speech
from switchboard.channels.prose.route import (
    BLOCKED_STICKY,
    NO_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
    route_prefixed,
    route_unprefixed,
    sticky_after_failed_delivery,
)

D = Disposition
KNOWN = frozenset({"#alpha", "#beta", "#cafe", "z:skip_reply", "@laria"})


def known(token: str) -> bool:
    return token in KNOWN


def routes(text: str, mode: ProseMode, sticky: Sticky = NO_STICKY) -> list[tuple[D, str | None]]:
    result = parse_speech(text, mode=mode, sticky=sticky, resolves=known)
    return [(s.route.disposition, s.target) for s in result.segments]


def after(text: str, mode: ProseMode, sticky: Sticky = NO_STICKY) -> Sticky:
    return parse_speech(text, mode=mode, sticky=sticky, resolves=known).sticky


UNPREFIXED_TABLE = [
    (ProseMode.LOCUS, NO_STICKY, Route(D.LOCUS)),
    (ProseMode.LOCUS, Sticky.on("#alpha"), Route(D.LOCUS)),
    (ProseMode.EXPLICIT, NO_STICKY, Route(D.BOUNCE)),
    (ProseMode.EXPLICIT, Sticky.on("#alpha"), Route(D.TARGET, "#alpha")),
    (ProseMode.EXPLICIT, BLOCKED_STICKY, Route(D.BOUNCE)),
    (ProseMode.HYBRID, NO_STICKY, Route(D.LOCUS)),
    (ProseMode.HYBRID, Sticky.on("#cafe"), Route(D.TARGET, "#cafe")),
    (ProseMode.HYBRID, BLOCKED_STICKY, Route(D.BOUNCE)),
    (ProseMode.DISABLED, NO_STICKY, Route(D.WITHHELD)),
    (ProseMode.DISABLED, Sticky.on("#alpha"), Route(D.WITHHELD)),
]


@pytest.mark.parametrize(("mode", "sticky", "route"), UNPREFIXED_TABLE)
def test_unprefixed_prose_goes_where_the_mode_table_says(
    mode: ProseMode, sticky: Sticky, route: Route
) -> None:
    assert route_unprefixed(mode, sticky) == route
    (segment,) = parse_speech("words", mode=mode, sticky=sticky).segments
    assert segment.route == route


PREFIXED_TABLE = [
    # mode, token, sticky before, disposition, sticky after
    (ProseMode.EXPLICIT, "#alpha", NO_STICKY, D.TARGET, Sticky.on("#alpha")),
    (ProseMode.EXPLICIT, "#nope", Sticky.on("#alpha"), D.BOUNCE, Sticky.on("#alpha")),
    (ProseMode.EXPLICIT, "#nope", NO_STICKY, D.BOUNCE, NO_STICKY),
    (ProseMode.EXPLICIT, "skip_reply", Sticky.on("#alpha"), D.PRIVATE, BLOCKED_STICKY),
    (ProseMode.HYBRID, "#cafe", BLOCKED_STICKY, D.TARGET, Sticky.on("#cafe")),
    (ProseMode.HYBRID, "#nope", Sticky.on("#cafe"), D.BOUNCE, BLOCKED_STICKY),
    (ProseMode.HYBRID, "skip_reply", Sticky.on("#cafe"), D.PRIVATE, BLOCKED_STICKY),
]


@pytest.mark.parametrize(("mode", "token", "before", "disposition", "later"), PREFIXED_TABLE)
def test_a_prefixed_segment_routes_and_moves_the_sticky_target_as_the_table_says(
    mode: ProseMode, token: str, before: Sticky, disposition: Disposition, later: Sticky
) -> None:
    route, sticky = route_prefixed(mode, token, continue_=False, sticky=before, resolves=known)
    assert route == Route(disposition, token, False, explicit=True)
    assert sticky == later


@pytest.mark.parametrize("mode", [ProseMode.LOCUS, ProseMode.DISABLED])
def test_modes_without_prefixes_refuse_to_route_a_prefixed_segment(mode: ProseMode) -> None:
    with pytest.raises(ValueError, match="no prefixes"):
        route_prefixed(mode, "#alpha", continue_=False, sticky=NO_STICKY, resolves=known)


def test_a_target_is_sticky_across_tool_rounds_but_not_across_turns() -> None:
    # channel-registry.md T19
    first = parse_speech(">>#alpha first", mode=ProseMode.EXPLICIT, resolves=known)
    second = parse_speech("second", mode=ProseMode.EXPLICIT, sticky=first.sticky, resolves=known)
    assert [(s.target, s.text, s.explicit) for s in second.segments] == [
        ("#alpha", "second", False)
    ]
    next_turn = parse_speech("third", mode=ProseMode.EXPLICIT, resolves=known)
    assert next_turn.segments[0].route.disposition is D.BOUNCE


def test_the_sticky_target_is_the_latest_resolved_one() -> None:
    sticky = after(">>#alpha a\n>>#beta b", ProseMode.EXPLICIT)
    assert sticky == Sticky.on("#beta")
    assert routes("c", ProseMode.EXPLICIT, sticky) == [(D.TARGET, "#beta")]


def test_in_explicit_mode_an_unresolved_target_bounces_and_keeps_the_earlier_sticky_target() -> (
    None
):
    sticky = after(">>#alpha a", ProseMode.EXPLICIT)
    assert routes(">>#typo b", ProseMode.EXPLICIT, sticky) == [(D.BOUNCE, "#typo")]
    sticky = after(">>#typo b", ProseMode.EXPLICIT, sticky)
    assert routes("c", ProseMode.EXPLICIT, sticky) == [(D.TARGET, "#alpha")]


def test_in_hybrid_mode_an_unresolved_envelope_blocks_later_prose_instead_of_using_the_locus() -> (
    None
):
    assert routes("a", ProseMode.HYBRID) == [(D.LOCUS, None)]
    sticky = after(">>>#typo b", ProseMode.HYBRID)
    assert routes("c", ProseMode.HYBRID, sticky) == [(D.BOUNCE, None)]
    fresh = after(">>>#cafe", ProseMode.HYBRID, sticky)
    assert routes("d", ProseMode.HYBRID, fresh) == [(D.TARGET, "#cafe")]


def test_a_target_only_envelope_delivers_nothing_and_sets_the_target_for_the_next_block() -> None:
    result = parse_speech(">>>#cafe", mode=ProseMode.HYBRID, resolves=known)
    assert [s.delivers for s in result.segments] == [False]
    assert routes("latte", ProseMode.HYBRID, result.sticky) == [(D.TARGET, "#cafe")]


@pytest.mark.parametrize(
    ("mode", "prefix"), [(ProseMode.EXPLICIT, ">>"), (ProseMode.HYBRID, ">>>")]
)
def test_skip_reply_is_private_and_later_unprefixed_prose_is_bounced_never_sent(
    mode: ProseMode, prefix: str
) -> None:
    sticky = after(f"{prefix}#alpha a", mode)
    result = parse_speech(f"{prefix}skip_reply\nnotes", mode=mode, sticky=sticky, resolves=known)
    assert [(s.route.disposition, s.text, s.delivers) for s in result.segments] == [
        (D.PRIVATE, "notes", False)
    ]
    assert routes("later", mode, result.sticky) == [(D.BOUNCE, None)]


def test_skip_reply_is_never_asked_of_the_resolver_even_when_a_channel_has_that_id() -> None:
    asked: list[str] = []

    def resolves(token: str) -> bool:
        asked.append(token)
        return token in {"skip_reply", "z:skip_reply"}  # a channel with id skip_reply exists

    result = parse_speech(
        ">>skip_reply hush\n>>z:skip_reply hello", mode=ProseMode.EXPLICIT, resolves=resolves
    )
    assert [(s.route.disposition, s.target) for s in result.segments] == [
        (D.PRIVATE, "skip_reply"),
        (D.TARGET, "z:skip_reply"),
    ]
    assert asked == ["z:skip_reply"]


def test_the_resolver_is_asked_once_per_prefixed_segment_in_text_order() -> None:
    asked: list[str] = []

    def resolves(token: str) -> bool:
        asked.append(token)
        return True

    parse_speech("x\n>>#b 1\n>>#a 2\n>>#b 3", mode=ProseMode.EXPLICIT, resolves=resolves)
    assert asked == ["#b", "#a", "#b"]


def test_a_failed_delivery_blocks_the_sticky_target_in_hybrid_mode_only() -> None:
    cafe = Sticky.on("#cafe")
    assert sticky_after_failed_delivery(ProseMode.HYBRID, cafe) == BLOCKED_STICKY
    assert sticky_after_failed_delivery(ProseMode.EXPLICIT, cafe) == cafe


def test_a_sticky_state_cannot_be_both_blocked_and_on_a_target() -> None:
    with pytest.raises(ValueError, match="blocked"):
        Sticky(target="#alpha", blocked=True)


def test_disabled_mode_never_delivers_and_never_bounces() -> None:
    result = parse_speech(">>#alpha hi\nmore", mode=ProseMode.DISABLED, resolves=known)
    assert [(s.route.disposition, s.delivers) for s in result.segments] == [(D.WITHHELD, False)]
    assert result.sticky == NO_STICKY


def test_a_route_knows_whether_it_delivers_and_whether_it_is_private() -> None:
    table = {d: (Route(d).delivers, Route(d).private) for d in Disposition}
    assert table == {
        D.LOCUS: (True, False),
        D.TARGET: (True, False),
        D.BOUNCE: (False, False),
        D.PRIVATE: (False, True),
        D.WITHHELD: (False, False),
    }
