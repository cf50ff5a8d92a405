"""What the lifecycle tools are told about a tuned-out channel: that the tool does not change
it, and how its tune-out ends."""

from __future__ import annotations

from switchboard.lifecycle.rules.words import (
    tune_out_end_text,
    tuned_out_meanwhile_text,
    tuned_out_refusal_text,
)


def test_a_tool_refused_on_a_tuned_out_channel_is_told_to_cancel_with_its_name() -> None:
    text = tuned_out_refusal_text('"g"', "g", "channel_open")
    assert text.startswith('Channel "g" is tuned out')
    assert "channel_open does not change that" in text
    assert 'channel "g"' in text
    assert '"cancel"' in text
    assert "backlog" in text
    assert text.endswith("backlog.")


def test_a_refused_close_adds_that_it_can_close_the_channel_after_the_cancel() -> None:
    text = tuned_out_refusal_text('"g"', "a:g", "channel_close")
    assert 'channel "a:g"' in text
    assert text.endswith("channel_close can close the channel after that.")


def test_a_channel_no_name_picks_alone_is_said_to_end_by_itself() -> None:
    text = tune_out_end_text(None)
    assert "No channel name" in text
    assert "tune_out cannot cancel" in text
    assert "wake budget" in text
    assert "time runs out" in text
    closing = tune_out_end_text(None, "channel_close")
    assert closing.endswith("Once it has ended, channel_close can close the channel.")
    declined = tuned_out_refusal_text('"b:room" on server "a"', None, "channel_decline")
    assert "channel_decline does not change that" in declined
    assert "No channel name" in declined


def test_an_open_that_finds_the_channel_tuned_out_meanwhile_says_so() -> None:
    text = tuned_out_meanwhile_text('"g"', "g", "channel_open")
    assert text.startswith('Channel "g" was tuned out meanwhile')
    assert 'channel "g"' in text
