"""Names shown to agents (§3.3) and ``>>`` targets (§4.5, §4.7): each resolves back."""

from __future__ import annotations

import pytest

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.channels.names.errors import AmbiguousName, InboundOnly, InvalidName, UnknownName
from tests.channels.channels_support import Desc, desc


def inbound(channel_id: str, label: str) -> Desc:
    return Desc(channel_id, label=label, direction="inbound")


def test_a_registered_channel_is_shown_by_the_name_that_picks_it() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general"), desc("solo")])
    reg.register("b", [desc("general")])
    names = reg.names
    assert names.name_shown(ChannelRef("a", "solo")) == "solo"
    assert names.name_shown(ChannelRef("a", "general")) == "a:general"
    assert names.quoted_shown(ChannelRef("a", "general")) == '"a:general"'


def test_a_gone_channel_is_shown_by_a_name_that_reaches_no_other_channel() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("g")])
    names = reg.names
    # "g" would now pick a/g, so the gone b/g is shown by its qualified name.
    assert names.name_shown(ChannelRef("b", "g")) == "b:g"
    assert names.name_shown(ChannelRef("b", "only-gone")) == "only-gone"
    # A string that some label answers to is not shown either.
    reg.register("c", [desc("x1", "#h"), desc("x2", "c:h")])
    assert names.name_shown(ChannelRef("c", "h")) == '"h" on server "c"'
    assert names.quoted_shown(ChannelRef("c", "h")) == '"h" on server "c"'


def test_a_gone_own_channel_is_shown_by_its_id_which_stays_bound_to_it() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("g")])
    gone = ChannelRef("b", "g")
    assert reg.names.name_shown(gone, {gone}) == "g"
    assert reg.names.name_shown(ChannelRef("a", "g"), {gone}) == "a:g"


def test_labels_match_case_insensitively_with_or_without_the_hash_and_the_suffix() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("c1", "#General"), desc("c2", "#fable (antra's server)")])
    for target in ("general", "#general", "GENERAL", " #General "):
        assert reg.names.resolve_prose_target(target).ref == ChannelRef("s", "c1")
    assert reg.names.resolve_prose_target("#fable").ref == ChannelRef("s", "c2")


def test_an_empty_target_is_invalid() -> None:
    with pytest.raises(InvalidName):
        ChannelRegistry().names.resolve_prose_target("  ")


def test_speech_into_an_inbound_only_channel_is_refused_but_reading_resolves() -> None:
    reg = ChannelRegistry()
    reg.register("s", [inbound("news-id", "#news")])
    with pytest.raises(InboundOnly) as caught:
        reg.names.resolve_prose_target("#news", for_speech=True)
    assert caught.value.ref == ChannelRef("s", "news-id")
    assert "inbound-only" in str(caught.value)
    assert '"news-id"' in str(caught.value)
    assert 'server "s"' in str(caught.value)
    assert reg.names.resolve_prose_target("#news").ref == ChannelRef("s", "news-id")
    assert reg.names.prose_target_for(ChannelRef("s", "news-id")) is None


def test_prose_candidates_are_named_only_by_valid_target_tokens() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("my room", "#ops")])
    reg.register("b", [desc("other", "#ops")])
    with pytest.raises(AmbiguousName) as caught:
        reg.names.resolve_prose_target("#ops")
    # Neither "my room" nor "a:my room" can follow >> (a space ends the token): no name.
    assert dict(zip(caught.value.candidates, caught.value.names, strict=True)) == {
        ChannelRef("a", "my room"): None,
        ChannelRef("b", "other"): "other",
    }
    assert "write >>" in str(caught.value)


@pytest.mark.parametrize(
    ("server", "descriptor", "token"),
    [
        ("s", desc("dm1", "DM: alice smith", dm_name="alice_s"), "@alice_s"),
        ("s", Desc("dm2", label="DM: Bob", metadata={"channelType": "dm"}), "@Bob"),
        ("s", desc("c1", "#general (Acme)"), "#general"),
        ("s", desc("c2", "ops"), "#ops"),
        ("z", desc("skip_reply", "skip reply"), "z:skip_reply"),
        ("s", desc("c3", "#team room"), "c3"),
        ("s", desc("c4"), "c4"),
    ],
)
def test_prose_target_for_gives_the_first_token_that_round_trips(
    server: str, descriptor: Desc, token: str
) -> None:
    reg = ChannelRegistry()
    reg.register(server, [descriptor])
    ref = ChannelRef(server, descriptor.id)
    assert reg.names.prose_target_for(ref) == token
    assert reg.names.resolve_prose_target(token, for_speech=True).ref == ref


def test_prose_target_for_falls_back_when_the_label_is_shared() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general", "#general")])
    reg.register("b", [desc("general", "#general")])
    assert reg.names.prose_target_for(ChannelRef("a", "general")) == "a:general"
    assert reg.names.prose_target_for(ChannelRef("b", "general")) == "b:general"
    assert reg.names.prose_target_for(ChannelRef("c", "general")) is None


def test_prose_target_for_respects_the_turns_own_channels() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general", "#general")])
    reg.register("b", [desc("general", "#general")])
    own = {ChannelRef("a", "general")}
    assert reg.names.prose_target_for(ChannelRef("a", "general"), own) == "general"
    assert reg.names.prose_target_for(ChannelRef("b", "general"), own) == "b:general"


def test_an_unknown_target_gets_near_names_that_are_valid_tokens() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("general", "#general"), desc("gen eral", "#gen eral")])
    with pytest.raises(UnknownName) as caught:
        reg.names.resolve_prose_target("generl")
    assert "general" in caught.value.suggestions
    assert all(" " not in s for s in caught.value.suggestions)
    assert "nothing was sent" in str(caught.value)
