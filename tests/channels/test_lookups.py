"""Lookups by id, qualified name, raw id, label and DM name, and the ChannelRef key."""

from __future__ import annotations

import pytest

from switchboard.channels import ChannelRef, ChannelRegistry, qualified_name
from switchboard.channels.descriptor import bare_label_key, dm_query, label_key
from tests.channels.channels_support import desc


def refs(entries: tuple[object, ...]) -> list[ChannelRef]:
    return [e.ref for e in entries]  # type: ignore[attr-defined]


def test_a_channel_ref_is_a_plain_pair_and_its_qualified_name_is_display_only() -> None:
    ref = ChannelRef("discord", "discord:g:1")
    assert ref == ("discord", "discord:g:1")
    assert hash(ref) == hash(("discord", "discord:g:1"))
    assert qualified_name(ref) == "discord:discord:g:1"
    assert ChannelRef("a", "b:room") != ChannelRef("a:b", "room")
    assert qualified_name(ChannelRef("a", "b:room")) == qualified_name(ChannelRef("a:b", "room"))


def test_two_servers_with_the_same_channel_id_are_both_found_by_id() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general")])
    reg.register("b", [desc("general")])
    assert refs(reg.by_id("general")) == [ChannelRef("a", "general"), ChannelRef("b", "general")]
    assert refs(reg.by_qualified_name("a:general")) == [ChannelRef("a", "general")]
    assert refs(reg.by_qualified_name("b:general")) == [ChannelRef("b", "general")]


def test_ids_containing_colons_are_found_whole_and_never_by_a_piece() -> None:
    reg = ChannelRegistry()
    reg.register("discord", [desc("discord:g:1")])
    entry = reg.get(ChannelRef("discord", "discord:g:1"))
    assert reg.by_id("discord:g:1") == (entry,)
    assert reg.by_qualified_name("discord:discord:g:1") == (entry,)
    for piece in ["g:1", "1", "discord:g", "discord:discord:g", "discord:g:1:"]:
        assert reg.by_id(piece) == (), piece
    assert reg.by_qualified_name("discord:g:1") == ()


def test_two_pairs_sharing_one_qualified_name_are_both_found() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    assert len(reg) == 2
    assert set(refs(reg.by_qualified_name("a:b:room"))) == {
        ChannelRef("a", "b:room"),
        ChannelRef("a:b", "room"),
    }


def test_a_qualified_name_matches_server_ids_containing_colons_and_empty_parts() -> None:
    reg = ChannelRegistry()
    reg.register("x:y:z", [desc(":")])
    reg.register("", [desc("q")])
    assert refs(reg.by_qualified_name("x:y:z::")) == [ChannelRef("x:y:z", ":")]
    assert refs(reg.by_qualified_name(":q")) == [ChannelRef("", "q")]
    assert reg.by_qualified_name("x:y:z:") == ()
    assert reg.by_qualified_name("") == ()


@pytest.mark.parametrize(
    ("label", "queries", "misses"),
    [
        ("#General", ["general", "#general", "GENERAL", "#GeNeRaL"], ["##general", "gen"]),
        (
            "#fable (antra's server)",
            ["#fable", "fable", "FABLE", "#fable (Antra's Server)"],
            ["fable (other)", "antra's server"],
        ),
        ("plain name", ["Plain Name", "#plain name"], ["plain"]),
        ("##double", ["##double", "##DOUBLE"], ["#double", "double"]),
        ("#x (a (b))", ["x (a (b))"], ["x", "x (a"]),
    ],
)
def test_labels_are_found_case_insensitively_with_one_hash_and_without_the_server_suffix(
    label: str, queries: list[str], misses: list[str]
) -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("c", label)])
    entry = reg.get(ChannelRef("s", "c"))
    for query in queries:
        assert reg.by_label(query) == (entry,), query
    for query in misses:
        assert reg.by_label(query) == (), query


def test_a_whole_label_match_is_preferred_to_a_label_without_its_suffix() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("with-suffix", "#fable (antra's server)"), desc("plain", "#fable")])
    reg.register("t", [desc("other", "#fable (elsewhere)")])
    assert refs(reg.by_label("fable")) == [ChannelRef("s", "plain")]
    reg.change("s", removed=["plain"])
    assert set(refs(reg.by_label("fable"))) == {
        ChannelRef("s", "with-suffix"),
        ChannelRef("t", "other"),
    }


def test_channels_without_labels_or_with_a_bare_hash_have_no_label_key() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("a", ""), desc("b", "#")])
    assert reg.by_label("") == ()
    assert reg.by_label("#") == ()
    assert reg.statistics().label_keys == 0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("@alice", ["alice-dm"]),
        ("alice", ["alice-dm"]),
        ("@ALICE", ["alice-dm"]),
        ("<@42>", ["alice-dm"]),
        ("<@!42>", ["alice-dm"]),
        ("@bob", ["bob-dm"]),
        ("<@7>", ["bob-dm"]),
        ("@@alice", []),
        ("<@>", []),
        ("42", []),
        ("@general", []),
    ],
)
def test_dms_are_found_by_recipient_name_or_mention(query: str, expected: list[str]) -> None:
    reg = ChannelRegistry()
    reg.register(
        "s",
        [
            desc("alice-dm", "DM: Alice Smith", dm_name="Alice", dm_id="42"),
            desc("bob-dm", "DM: Bob", dm_id=7),
            desc("general", "#general"),
        ],
    )
    assert [r.channel_id for r in refs(reg.by_dm_name(query))] == expected


def test_one_persons_dms_on_two_servers_are_both_found_by_mention() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("dm1", dm_name="carol", dm_id="42")])
    reg.register("b", [desc("dm1", dm_name="carol", dm_id="42")])
    assert refs(reg.by_dm_name("<@42>")) == [ChannelRef("a", "dm1"), ChannelRef("b", "dm1")]
    assert len(reg.by_dm_name("@carol")) == 2


def test_a_channel_is_a_dm_only_when_its_metadata_says_so() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("x:dm:1", "DM: eve")])
    assert reg.by_dm_name("@eve") == ()


def test_raw_ids_are_found_on_every_server_and_numbers_become_strings() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", raw="999"), desc("y", raw=1234), desc("z", raw="")])
    reg.register("b", [desc("x", raw="999")])
    assert refs(reg.by_raw_id("999")) == [ChannelRef("a", "x"), ChannelRef("b", "x")]
    assert refs(reg.by_raw_id("1234")) == [ChannelRef("a", "y")]
    entry = reg.get(ChannelRef("a", "z"))
    assert entry is not None
    assert entry.raw_id is None
    assert reg.by_raw_id("") == ()


def test_server_entries_and_servers_follow_registration() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("1"), desc("2")])
    reg.register("b", [desc("1")])
    assert [e.ref.channel_id for e in reg.server_entries("a")] == ["1", "2"]
    assert reg.server_entries("none") == []
    assert reg.servers() == frozenset({"a", "b"})
    assert [e.ref for e in reg.entries()] == [
        ChannelRef("a", "1"),
        ChannelRef("a", "2"),
        ChannelRef("b", "1"),
    ]


@pytest.mark.parametrize(
    ("label", "key", "bare"),
    [
        ("#General (Acme)", "general (acme)", "general"),
        ("general", "general", None),
        ("#a  (b)", "a  (b)", "a"),
        (" (b)", " (b)", None),
        ("x (y) z", "x (y) z", None),
        ("#(only)", "(only)", None),
    ],
)
def test_label_keys_are_normalized_the_same_way_for_storage_and_queries(
    label: str, key: str, bare: str | None
) -> None:
    assert label_key(label) == key
    assert bare_label_key(key) == bare


def test_dm_queries_tell_mentions_from_names() -> None:
    assert dm_query("<@42>") == (True, "42")
    assert dm_query("<@!42>") == (True, "42")
    assert dm_query("@Alice") == (False, "alice")
    assert dm_query("<@>") == (False, "<@>")
