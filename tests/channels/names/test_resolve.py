"""Resolving a typed name to one channel, refusing ambiguity, and name_for."""

from __future__ import annotations

import pytest

from switchboard.channels import (
    AmbiguousName,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    UnknownName,
)
from switchboard.channels.names.suggest import SUGGESTION_SAMPLE
from tests.channels.channels_support import desc


def ambiguity(reg: ChannelRegistry, name: str, server_id: str | None = None) -> AmbiguousName:
    with pytest.raises(AmbiguousName) as caught:
        reg.resolve(name, server_id=server_id)
    return caught.value


def unknown(reg: ChannelRegistry, name: str, server_id: str | None = None) -> UnknownName:
    with pytest.raises(UnknownName) as caught:
        reg.resolve(name, server_id=server_id)
    return caught.value


def test_a_shared_id_is_refused_with_both_candidates_and_server_id_picks_one() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general")])
    reg.register("b", [desc("general")])
    error = ambiguity(reg, "general")
    assert error.candidates == (ChannelRef("a", "general"), ChannelRef("b", "general"))
    assert error.names == ("a:general", "b:general")
    message = str(error)
    assert '"a:general"' in message
    assert '"b:general"' in message
    assert "server_id" in message
    assert reg.resolve("general", server_id="a").ref == ChannelRef("a", "general")
    assert reg.resolve("general", server_id="b").ref == ChannelRef("b", "general")
    assert reg.resolve("a:general").ref == ChannelRef("a", "general")
    assert reg.name_for(ChannelRef("a", "general")) == "a:general"


def test_an_id_with_colons_resolves_by_id_and_by_qualified_name_but_never_by_a_piece() -> None:
    reg = ChannelRegistry()
    reg.register("discord", [desc("discord:g:1")])
    ref = ChannelRef("discord", "discord:g:1")
    assert reg.resolve("discord:g:1").ref == ref
    assert reg.resolve("discord:discord:g:1").ref == ref
    unknown(reg, "g:1")
    assert reg.name_for(ref) == "discord:g:1"


def test_the_qualified_name_collision_is_refused_with_both_candidates() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    error = ambiguity(reg, "a:b:room")
    assert set(error.candidates) == {ChannelRef("a", "b:room"), ChannelRef("a:b", "room")}
    # The ids differ from the name, so a server_id would not help: no server_id advice.
    assert "server_id" not in str(error)
    assert reg.name_for(ChannelRef("a", "b:room")) == "b:room"
    assert reg.name_for(ChannelRef("a:b", "room")) == "room"
    assert reg.resolve("b:room").ref == ChannelRef("a", "b:room")
    assert reg.resolve("room").ref == ChannelRef("a:b", "room")


def test_when_no_name_picks_a_channel_alone_it_needs_its_server_id() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    reg.register("c", [desc("b:room")])
    reg.register("x", [desc("room")])
    for ref in (ChannelRef("a", "b:room"), ChannelRef("a:b", "room")):
        assert reg.needs_server_id(ref)
        assert reg.name_for(ref) == ref.channel_id
        assert reg.resolve(reg.name_for(ref), server_id=ref.server_id).ref == ref
    assert not reg.needs_server_id(ChannelRef("c", "b:room"))
    assert reg.name_for(ChannelRef("c", "b:room")) == "c:b:room"
    error = ambiguity(reg, "a:b:room")
    assert error.names == (None, None)
    assert 'channel "b:room" and server_id "a"' in str(error)
    assert 'channel "room" and server_id "a:b"' in str(error)


def test_one_server_registering_room_and_s_colon_room_makes_s_colon_room_ambiguous() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("room"), desc("s:room")])
    error = ambiguity(reg, "s:room")
    assert set(error.candidates) == {ChannelRef("s", "room"), ChannelRef("s", "s:room")}
    assert set(error.names) == {"room", "s:s:room"}
    assert '"s"' in str(error)
    assert reg.name_for(ChannelRef("s", "room")) == "room"
    assert reg.name_for(ChannelRef("s", "s:room")) == "s:s:room"
    assert reg.resolve("s:s:room").ref == ChannelRef("s", "s:room")
    assert reg.resolve("s:room", server_id="s").ref == ChannelRef("s", "s:room")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # An exact id wins over a label equal to it.
        ("general", ChannelRef("s", "general")),
        # A raw address id wins over a label.
        ("555", ChannelRef("s", "raw-holder")),
        # A label, case-insensitively, with or without '#', or without its suffix.
        ("#Random", ChannelRef("s", "random-id")),
        ("news", ChannelRef("s", "news-id")),
        # A DM by name or mention, after labels.
        ("@alice", ChannelRef("s", "dm-alice")),
        ("<@42>", ChannelRef("s", "dm-alice")),
        ("@ALICE", ChannelRef("s", "dm-alice")),
    ],
)
def test_tiers_are_tried_in_order_id_raw_id_label_dm(name: str, expected: ChannelRef) -> None:
    reg = ChannelRegistry()
    reg.register(
        "s",
        [
            desc("general", "#general"),
            desc("label-says-general", "general"),
            desc("raw-holder", "#raw", raw="555"),
            desc("label-555", "555"),
            desc("random-id", "#random"),
            desc("news-id", "#news (Acme)"),
            desc("dm-alice", "DM: Alice", dm_name="alice", dm_id=42),
        ],
    )
    assert reg.resolve(name).ref == expected


def test_a_dm_is_named_by_at_name_or_mention_and_not_by_the_bare_recipient_name() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("dm-alice", "DM: Alice", dm_name="alice", dm_id=42)])
    assert reg.resolve("@alice").ref == ChannelRef("s", "dm-alice")
    error = unknown(reg, "alice")
    assert error.suggestions == ("dm-alice",)


def test_the_first_tier_with_hits_decides_even_when_a_later_tier_has_one() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", raw="r")])
    reg.register("b", [desc("y", raw="r"), desc("r", "#r")])
    # "r" is an id (b/r): tier 1 has exactly one hit.
    assert reg.resolve("r").ref == ChannelRef("b", "r")
    reg.change("b", removed=["r"])
    reg.register("c", [desc("z", "#r")])
    # Now tier 1 is empty and tier 2 (raw id) has two hits: refused, the label is not tried.
    error = ambiguity(reg, "r")
    assert set(error.candidates) == {ChannelRef("a", "x"), ChannelRef("b", "y")}


def test_two_channels_with_the_same_label_are_refused() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("1", "#general (A)")])
    reg.register("b", [desc("2", "#general (B)")])
    error = ambiguity(reg, "#general")
    assert set(error.candidates) == {ChannelRef("a", "1"), ChannelRef("b", "2")}
    assert reg.resolve("#general (a)").ref == ChannelRef("a", "1")


def test_with_a_server_id_only_that_servers_id_or_raw_id_answers() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", "#lbl", raw="9"), desc("y", raw="dup"), desc("z", raw="dup")])
    reg.register("b", [desc("x", raw="9")])
    assert reg.resolve("x", server_id="b").ref == ChannelRef("b", "x")
    assert reg.resolve("9", server_id="a").ref == ChannelRef("a", "x")
    error = ambiguity(reg, "dup", server_id="a")
    assert error.server_id == "a"
    assert set(error.candidates) == {ChannelRef("a", "y"), ChannelRef("a", "z")}
    assert 'on server "a"' in str(error)
    # Qualified names and labels are not accepted together with a server id.
    unknown(reg, "a:x", server_id="b")
    unknown(reg, "#lbl", server_id="a")


def test_an_id_that_exists_only_elsewhere_is_suggested_without_server_id() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x")])
    error = unknown(reg, "x", server_id="b")
    assert error.suggestions == ("x",)
    assert error.server_id == "b"
    assert 'on server "a"' in str(error)
    assert "leave server_id out" in str(error)


def test_an_unknown_name_is_refused_with_a_few_near_names() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general", "#general"), desc("random", "#random"), desc("Alpha")])
    error = unknown(reg, "genral")
    assert "general" in error.suggestions
    assert "genral" in str(error)
    assert '"general"' in str(error)
    assert unknown(reg, "alpha").suggestions[0] == "Alpha"
    assert unknown(reg, "zzzzzzzz").suggestions == ()
    assert isinstance(error, ChannelNameError)


def test_suggestions_never_include_a_name_that_does_not_pick_one_channel() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general")])
    reg.register("b", [desc("general")])
    error = unknown(reg, "generl")
    assert set(error.suggestions) <= {"a:general", "b:general"}
    assert error.suggestions


def test_suggestions_stay_bounded_on_a_large_registry() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc(f"chan-{i}", f"#chan {i}") for i in range(SUGGESTION_SAMPLE * 5)])
    error = unknown(reg, "chan-")
    assert 0 < len(error.suggestions) <= 5


def test_an_empty_name_is_unknown() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", "#")])
    unknown(reg, "")


def test_name_for_an_unregistered_channel_raises_key_error() -> None:
    reg = ChannelRegistry()
    with pytest.raises(KeyError):
        reg.name_for(ChannelRef("a", "x"))
    with pytest.raises(KeyError):
        reg.needs_server_id(ChannelRef("a", "x"))
