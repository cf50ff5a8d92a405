"""What a string names: tiers in order, ids with colons, qualified-name collisions, DMs."""

from __future__ import annotations

import pytest

from switchboard.channels import AmbiguousName, ChannelRef, ChannelRegistry, UnknownName
from switchboard.channels.names.tiers import PARTIAL_LIMIT, Tier
from tests.channels.channels_support import Desc, desc


def ambiguity(reg: ChannelRegistry, name: str, **kwargs: object) -> AmbiguousName:
    with pytest.raises(AmbiguousName) as caught:
        reg.names.resolve(name, **kwargs)  # type: ignore[arg-type]
    return caught.value


def unknown(reg: ChannelRegistry, name: str) -> UnknownName:
    with pytest.raises(UnknownName) as caught:
        reg.resolve(name)
    return caught.value


def test_two_servers_with_the_same_id_each_get_their_qualified_name() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general")])
    reg.register("b", [desc("general"), desc("unique")])
    assert reg.names.name_for(ChannelRef("a", "general")) == "a:general"
    assert reg.names.name_for(ChannelRef("b", "general")) == "b:general"
    assert reg.names.name_for(ChannelRef("b", "unique")) == "unique"
    assert reg.resolve("a:general").ref == ChannelRef("a", "general")
    error = ambiguity(reg, "general")
    assert error.tier is Tier.NAME
    assert error.names == ("a:general", "b:general")


def test_an_id_with_colons_is_never_split() -> None:
    reg = ChannelRegistry()
    reg.register("discord", [desc("discord:g:1")])
    ref = ChannelRef("discord", "discord:g:1")
    assert reg.names.channels_named("discord:g:1") == (ref,)
    assert reg.names.channels_named("discord:discord:g:1") == (ref,)
    assert reg.names.channels_named("g:1") == ()
    unknown(reg, "g:1")


def test_a_qualified_name_two_registered_pairs_share_is_refused_and_each_has_its_own_name() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    assert len(reg) == 2
    error = ambiguity(reg, "a:b:room")
    assert set(error.candidates) == {ChannelRef("a", "b:room"), ChannelRef("a:b", "room")}
    assert dict(zip(error.candidates, error.names, strict=True)) == {
        ChannelRef("a", "b:room"): "b:room",
        ChannelRef("a:b", "room"): "room",
    }
    # The ids differ from the typed name, so a server id would not help and is not offered.
    assert "server_id" not in str(error)


def test_when_ids_are_shared_too_the_collision_names_each_candidate_by_id_and_server() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    reg.register("c", [desc("b:room")])
    reg.register("x", [desc("room")])
    error = ambiguity(reg, "a:b:room")
    assert error.names == (None, None)
    text = str(error)
    assert '"b:room" on server "a"' in text
    assert '"room" on server "a:b"' in text
    assert 'channel "b:room" and server_id "a"' in text
    assert reg.names.name_for(ChannelRef("a", "b:room")) is None
    assert reg.names.name_for(ChannelRef("c", "b:room")) == "c:b:room"


def test_one_server_registering_room_and_s_room_refuses_s_room_on_that_server() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("room"), desc("s:room")])
    error = ambiguity(reg, "s:room")
    assert dict(zip(error.candidates, error.names, strict=True)) == {
        ChannelRef("s", "room"): "room",
        ChannelRef("s", "s:room"): "s:s:room",
    }
    assert 'on server "s"' in str(error)
    assert reg.resolve("s:s:room").ref == ChannelRef("s", "s:room")


def test_skip_reply_and_a_label_with_spaces_are_ordinary_names_for_the_general_resolver() -> None:
    reg = ChannelRegistry()
    reg.register("z", [desc("skip_reply", "skip reply"), desc("c1", "#Team Room (Acme)")])
    assert reg.resolve("skip_reply").ref == ChannelRef("z", "skip_reply")
    assert reg.resolve("team room").ref == ChannelRef("z", "c1")
    assert reg.resolve("#TEAM ROOM (acme)").ref == ChannelRef("z", "c1")


@pytest.mark.parametrize(
    ("name", "expected", "tier"),
    [
        ("general", ChannelRef("s", "general"), Tier.NAME),
        ("555", ChannelRef("s", "raw-holder"), Tier.RAW_ID),
        ("#Random", ChannelRef("s", "random-id"), Tier.LABEL),
        ("RANDOM", ChannelRef("s", "random-id"), Tier.LABEL),
        ("#news", ChannelRef("s", "news-id"), Tier.BARE_LABEL),
        ("@alice", ChannelRef("s", "dm-alice"), Tier.DM_NAME),
        ("<@!42>", ChannelRef("s", "dm-alice"), Tier.DM_MENTION),
        ("@ali", ChannelRef("s", "dm-alice"), Tier.DM_PARTIAL),
        ("@alice_smith", ChannelRef("s", "dm-alice"), Tier.DM_PARTIAL),
    ],
)
def test_each_kind_of_name_is_found_at_its_tier(
    name: str, expected: ChannelRef, tier: Tier
) -> None:
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
    match = reg.names.match(name)
    assert match is not None
    assert match.tier is tier
    assert reg.resolve(name).ref == expected


def test_a_whole_label_wins_over_another_channels_label_without_its_suffix() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("1", "#fable"), desc("2", "#fable (antra's server)")])
    assert reg.resolve("#fable").ref == ChannelRef("s", "1")
    assert reg.resolve("fable (antra's server)").ref == ChannelRef("s", "2")


def test_two_labels_without_their_suffix_are_refused_and_the_refusal_shows_the_labels() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("1", "#ops (A)")])
    reg.register("b", [desc("2", "#ops (B)")])
    error = ambiguity(reg, "#ops")
    assert error.tier is Tier.BARE_LABEL
    assert error.names == ("1", "2")
    assert '"#ops (A)"' in str(error)
    assert '"#ops (B)"' in str(error)


def test_one_persons_dms_on_two_servers_are_refused_by_mention_and_by_name() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("dm1", "DM: laria", dm_name="laria", dm_id="42")])
    reg.register("b", [desc("dm1", "DM: laria", dm_name="laria", dm_id="42")])
    for name in ("<@42>", "@laria", "@Laria"):
        error = ambiguity(reg, name)
        assert set(error.candidates) == {ChannelRef("a", "dm1"), ChannelRef("b", "dm1")}
        # The labels are shared, so each DM is offered by its qualified name.
        assert error.names == ("a:dm1", "b:dm1")


def test_a_dm_is_offered_by_its_label_when_that_label_picks_it() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("dm1", "laria-a", dm_name="laria", dm_id="42")])
    reg.register("b", [desc("dm1", "laria-b", dm_name="laria", dm_id="42")])
    assert ambiguity(reg, "<@42>").names == ("laria-a", "laria-b")


def test_a_partial_dm_name_that_fits_several_people_is_refused() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("d1", dm_name="annabel"), desc("d2", dm_name="hannah")])
    error = ambiguity(reg, "@ann")
    assert error.tier is Tier.DM_PARTIAL
    assert set(error.candidates) == {ChannelRef("s", "d1"), ChannelRef("s", "d2")}
    assert reg.resolve("@nabel").ref == ChannelRef("s", "d1")


def test_a_partial_dm_name_fitting_very_many_lists_a_bounded_few() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc(f"d{i}", dm_name=f"user{i:03}") for i in range(50)])
    error = ambiguity(reg, "@user")
    assert error.more
    assert len(error.candidates) == PARTIAL_LIMIT


def test_an_at_name_without_a_dm_is_unknown_and_says_so() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("dm1", dm_name="bo", dm_id=7)])
    assert "DM" in str(unknown(reg, "@zed"))
    assert "recipient id" in str(unknown(reg, "<@8>"))
    # A DM name shorter than three characters matches only exactly.
    unknown(reg, "@bob")
    assert reg.resolve("@bo").ref == ChannelRef("s", "dm1")


def test_an_exact_id_wins_over_a_label_and_a_raw_id_over_a_label() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("x", "#y"), desc("y", "#x"), desc("z", "#r", raw="q"), desc("q2", "q")])
    assert reg.resolve("x").ref == ChannelRef("s", "x")
    assert reg.resolve("y").ref == ChannelRef("s", "y")
    assert reg.resolve("q").ref == ChannelRef("s", "z")


def test_dm_partial_lookups_follow_registrations_and_removals() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("d1", dm_name="annabel")])
    assert reg.resolve("@nab").ref == ChannelRef("s", "d1")
    reg.register("s", [desc("d2", dm_name="nabil")])
    ambiguity(reg, "@nab")
    reg.change("s", removed=["d1"])
    assert reg.resolve("@nab").ref == ChannelRef("s", "d2")
    reg.change("s", updated=[Desc("d2", metadata={"channelType": "dm", "recipientName": "zed"})])
    unknown(reg, "@nab")
    reg.register("t", [desc(f"m{i}", dm_name=f"nab{i:03}") for i in range(100)])
    assert ambiguity(reg, "@nab").more
    reg.remove_server("t")
    unknown(reg, "@nab")
