"""Bounced drafts are kept, and {{unsent}} brings the latest one back."""

from __future__ import annotations

import pytest

from switchboard.channels.prose.drafts import UNSENT, Draft, DraftBox, NoUnsentDraft
from switchboard.channels.prose.grammar import parse_speech
from switchboard.channels.prose.route import ProseMode, Sticky


def test_a_kept_draft_is_the_latest_until_another_is_kept() -> None:
    box = DraftBox()
    first = box.keep("hello there", "#typo")
    assert first == Draft("hello there", "#typo")
    assert box.latest == first
    second = box.keep("again")
    assert box.latest == second == Draft("again", None)
    assert box.drafts() == (first, second)
    assert len(box) == 2


def test_blank_text_is_not_kept() -> None:
    box = DraftBox()
    assert box.keep(" \n\t") is None
    assert box.latest is None
    assert len(box) == 0


def test_the_box_drops_its_oldest_draft_past_capacity() -> None:
    box = DraftBox(capacity=2)
    for word in ["one", "two", "three"]:
        box.keep(word)
    assert [d.text for d in box.drafts()] == ["two", "three"]


def test_a_box_must_keep_at_least_one_draft() -> None:
    with pytest.raises(ValueError, match="at least one"):
        DraftBox(capacity=0)


def test_unsent_brings_back_the_latest_draft_everywhere_it_appears() -> None:
    box = DraftBox()
    box.keep("older")
    box.keep("the words")
    assert box.expand_unsent(f"as I said: {UNSENT} ({UNSENT})") == (
        "as I said: the words (the words)"
    )


def test_text_without_the_marker_is_returned_unchanged_even_with_no_drafts() -> None:
    assert DraftBox().expand_unsent("plain {unsent} text") == "plain {unsent} text"


def test_unsent_with_no_draft_is_refused_so_the_marker_never_reaches_a_channel() -> None:
    with pytest.raises(NoUnsentDraft) as caught:
        DraftBox().expand_unsent(f"resending: {UNSENT}")
    assert UNSENT in str(caught.value)
    assert isinstance(caught.value, LookupError)


def test_a_draft_that_contains_the_marker_is_not_expanded_twice() -> None:
    box = DraftBox()
    box.keep(f"literal {UNSENT}")  # kept as written: there was nothing to bring back
    assert box.expand_unsent(UNSENT) == f"literal {UNSENT}"


def test_bouncing_unsent_again_keeps_the_words_it_stood_for() -> None:
    box = DraftBox()
    box.keep("precious words", "#typo")
    rebounced = box.keep(f"{UNSENT}!", "#typo2")
    assert rebounced == Draft("precious words!", "#typo2")


def test_expanding_does_not_use_a_draft_up_and_discard_forgets_it() -> None:
    box = DraftBox()
    draft = box.keep("words")
    assert draft is not None
    box.expand_unsent(UNSENT)
    assert box.latest == draft
    assert box.discard(draft)
    assert box.drafts() == ()
    assert not box.discard(draft)


def test_clear_forgets_every_draft() -> None:
    box = DraftBox()
    box.keep("a")
    box.keep("b")
    box.clear()
    assert box.drafts() == ()


def test_only_bounced_segments_become_drafts() -> None:
    text = "no target yet\n>>#typo lost words\n>>skip_reply private\n>>#alpha sent\n>>#typo \n"
    result = parse_speech(text, mode=ProseMode.EXPLICIT, resolves=lambda t: t == "#alpha")
    box = DraftBox()
    kept = box.keep_bounced(result.segments)
    assert kept == (Draft("no target yet"), Draft("lost words", "#typo"))
    assert box.latest == Draft("lost words", "#typo")


def test_withheld_prose_in_disabled_mode_is_not_a_draft() -> None:
    result = parse_speech("quiet", mode=ProseMode.DISABLED)
    assert DraftBox().keep_bounced(result.segments) == ()


def test_a_bounce_and_its_resend_across_two_tool_rounds() -> None:
    box = DraftBox()
    first = parse_speech("hello all", mode=ProseMode.EXPLICIT)
    box.keep_bounced(first.segments)
    second = parse_speech(f">>#alpha {UNSENT}", mode=ProseMode.EXPLICIT, sticky=first.sticky)
    (segment,) = second.segments
    assert segment.text == UNSENT  # the stored text keeps the marker
    assert box.expand_unsent(segment.text) == "hello all"  # the wire gets the words
    assert second.sticky == Sticky.on("#alpha")
