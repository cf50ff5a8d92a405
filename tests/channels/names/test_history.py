"""Label history (§2.8): which sightings are kept, replay, and the durable resolver."""

from __future__ import annotations

from switchboard.channels import ChannelRegistry
from switchboard.channels.names.history import (
    DmMeta,
    LabelHistory,
    LabelSighting,
    extract_dm_meta,
)
from tests.channels.channels_support import desc


def test_dm_hints_are_read_from_metadata_and_is_dm_is_only_ever_true() -> None:
    assert extract_dm_meta(None) == DmMeta()
    assert extract_dm_meta({"channelType": "dm", "recipientId": 42, "recipientName": "al"}) == (
        DmMeta("42", "al", True)
    )
    assert extract_dm_meta({"channelType": "text", "recipientName": ""}) == DmMeta()


def test_only_sightings_that_change_something_are_kept() -> None:
    history = LabelHistory()
    assert history.sight("c1", "") is None
    assert history.sight("c1", None) is None
    first = history.sight("c1", "#general")
    assert first == LabelSighting("c1", "#general")
    assert history.sight("c1", "#general") is None
    assert history.sight("c1", "#lobby") == LabelSighting("c1", "#lobby")
    assert history.labels("c1") == ("#general", "#lobby")
    assert history.latest("c1") == "#lobby"


def test_a_placeholder_label_never_clobbers_a_real_one() -> None:
    history = LabelHistory()
    assert history.sight("dm:9", "dm:9") is not None  # nothing known yet: kept
    assert history.sight("dm:9", "DM: ana") is not None
    assert history.sight("dm:9", "dm:9") is None
    assert history.latest("dm:9") == "DM: ana"


def test_dm_fields_count_as_a_change_only_when_given_and_different() -> None:
    history = LabelHistory()
    assert history.sight("d", "DM: ana", DmMeta("7", "ana", True)) is not None
    assert history.sight("d", "DM: ana", DmMeta(None, None, False)) is None
    assert history.sight("d", "DM: ana", DmMeta("7", None, True)) is None
    assert history.sight("d", "DM: ana", DmMeta("8")) is not None
    assert history.ids_for("<@8>") == ("d",)
    assert history.ids_for("<@7>") == ()


def test_old_labels_bare_labels_and_dm_names_all_lead_back_to_the_id() -> None:
    history = LabelHistory()
    history.sight("c1", "#fable (antra's server)")
    history.sight("c1", "#renamed")
    history.sight("x:dm:5", "someone")
    history.sight("d2", "DM: Bo", DmMeta("5"))
    assert history.ids_for("#FABLE") == ("c1",)
    assert history.ids_for("renamed") == ("c1",)
    assert history.ids_for("@someone") == ("x:dm:5",)
    assert history.ids_for("@bo") == ("d2",)
    assert history.ids_for("<@5>") == ("d2",)
    assert history.is_dm("x:dm:5")
    assert not history.is_dm("c1")
    assert history.dm_name("c1") is None


def test_replay_rebuilds_the_same_answers_and_skips_junk() -> None:
    history = LabelHistory()
    kept = [
        s
        for s in (
            history.sight("c1", "#a"),
            history.sight("c1", "#b"),
            history.sight("d", "DM: z", DmMeta("1", "zed", True)),
        )
        if s is not None
    ]
    again = LabelHistory()
    junk: list[object] = [None, {"channelId": "c9"}, LabelSighting("c9", "")]
    assert again.replay([kept[0], *junk, *kept[1:]]) == 3
    for name in ("#a", "#b", "@zed", "<@1>", "@z"):
        assert again.ids_for(name) == history.ids_for(name), name
    assert again.labels("c1") == ("#a", "#b")


def test_the_durable_resolver_asks_the_live_registry_first_then_history() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("general", "#lobby")])
    reg.register("b", [desc("general")])
    history = LabelHistory()
    history.sight("old-id", "#lobby")
    history.sight("gone", "#attic")
    history.sight("g1", "#twin")
    history.sight("g2", "#twin")
    durable = reg.names.resolve_durable
    assert durable(history, "#lobby") == "general"
    # Shared live id on two servers: still one bare id.
    assert durable(history, "general") == "general"
    assert durable(history, " #attic ") == "gone"
    assert durable(history, "#twin") is None
    assert durable(history, "") is None
    assert durable(history, "nothing") is None
