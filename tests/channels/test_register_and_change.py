"""register / changed / remove_server / transport state, through the registry API."""

from __future__ import annotations

import pytest

from switchboard.channels import (
    ChannelRef,
    ChannelRegistry,
    DescriptorLike,
    ItemResult,
    Rejected,
)
from switchboard.channels.records import (
    INVALID_ID,
    NOT_REGISTERED,
    UPDATE_UNREGISTERED,
    accepted_result,
)
from switchboard.channels.registry import INVALID_REMOVAL
from tests.channels.channels_support import Desc, desc


def deny_secret(descriptor: DescriptorLike) -> str | None:
    return "capability_denied" if descriptor.id.startswith("secret") else None


def test_register_answers_one_result_per_item_in_order() -> None:
    reg = ChannelRegistry()
    change = reg.register("a", [desc("g"), desc("h")])
    assert change.results == (ItemResult("g", True), ItemResult("h", True))
    assert change.added == (ChannelRef("a", "g"), ChannelRef("a", "h"))
    assert change.updated == ()
    assert change.removed == ()
    assert len(reg) == 2


def test_a_rejected_item_neither_carries_others_in_nor_keeps_them_out() -> None:
    reg = ChannelRegistry()
    change = reg.register(
        "a",
        [
            desc("ok1"),
            Rejected("bad", "invalid descriptor: label must be a string"),
            desc("secret-room"),
            Rejected(None, INVALID_ID),
            desc("ok2"),
        ],
        authorize=deny_secret,
    )
    assert change.results == (
        ItemResult("ok1", True),
        ItemResult("bad", False, "invalid descriptor: label must be a string"),
        ItemResult("secret-room", False, "capability_denied"),
        ItemResult("", False, INVALID_ID),
        ItemResult("ok2", True),
    )
    assert change.added == (ChannelRef("a", "ok1"), ChannelRef("a", "ok2"))
    assert ChannelRef("a", "ok1") in reg
    assert ChannelRef("a", "ok2") in reg
    assert ChannelRef("a", "secret-room") not in reg
    assert ChannelRef("a", "bad") not in reg


@pytest.mark.parametrize(
    ("bad_id", "reported"),
    [("", ""), (None, ""), (42, "42")],
)
def test_a_descriptor_without_a_string_id_is_rejected_as_missing_its_id(
    bad_id: object, reported: str
) -> None:
    reg = ChannelRegistry()
    change = reg.register("a", [Desc(bad_id), desc("fine")])  # type: ignore[arg-type]
    assert change.results == (ItemResult(reported, False, INVALID_ID), ItemResult("fine", True))
    assert len(reg) == 1


def test_registering_an_existing_id_makes_a_new_closed_registration() -> None:
    reg = ChannelRegistry()
    ref = ChannelRef("a", "g")
    reg.register("a", [desc("g", "#old")])
    first = reg.get(ref)
    assert first is not None
    reg.set_transport_open(ref, True)
    reg.register("a", [desc("g", "#new")])
    second = reg.get(ref)
    assert second is not None
    assert second is not first
    assert second.registration > first.registration
    assert second.transport_open is False
    assert second.descriptor.label == "#new"
    assert reg.by_label("old") == ()
    assert reg.by_label("new") == (second,)
    assert len(reg) == 1


def test_every_registration_gets_a_new_increasing_serial() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x"), desc("y")])
    reg.register("b", [desc("x")])
    serials = [e.registration for e in reg.entries()]
    assert len(set(serials)) == 3
    assert serials == sorted(serials)


def test_changed_applies_removed_then_updated_then_added_in_one_result_list() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("g", "#general"), desc("k", "#keep")])
    ref_g = ChannelRef("a", "g")
    reg.set_transport_open(ref_g, True)
    change = reg.change(
        "a",
        added=[desc("g", "#general again")],
        removed=["g"],
        updated=[desc("g", "#too late"), desc("k", "#kept")],
    )
    # g is removed first, so its update is refused, then it is added back as new.
    assert change.results == (
        ItemResult("g", True),
        ItemResult("g", False, UPDATE_UNREGISTERED),
        ItemResult("k", True),
        ItemResult("g", True),
    )
    assert change.removed == (ref_g,)
    assert change.updated == (ChannelRef("a", "k"),)
    assert change.added == (ref_g,)
    entry = reg.get(ref_g)
    assert entry is not None
    assert entry.transport_open is False
    assert entry.descriptor.label == "#general again"


def test_an_update_replaces_the_descriptor_in_place_and_keeps_state() -> None:
    reg = ChannelRegistry()
    ref = ChannelRef("a", "g")
    reg.register("a", [desc("g", "#old", raw="100")])
    entry = reg.get(ref)
    assert entry is not None
    reg.set_transport_open(ref, True)
    serial = entry.registration
    change = reg.change("a", updated=[desc("g", "#new", raw="200")])
    assert change.results == (ItemResult("g", True),)
    assert reg.get(ref) is entry
    assert entry.transport_open is True
    assert entry.registration == serial
    assert entry.raw_id == "200"
    assert reg.by_label("#old") == ()
    assert reg.by_label("#NEW") == (entry,)
    assert reg.by_raw_id("100") == ()
    assert reg.by_raw_id("200") == (entry,)


def test_an_update_of_an_unregistered_channel_is_refused() -> None:
    reg = ChannelRegistry()
    reg.register("b", [desc("ghost")])
    change = reg.change("a", updated=[desc("ghost")])
    assert change.results == (ItemResult("ghost", False, UPDATE_UNREGISTERED),)
    assert "update" in UPDATE_UNREGISTERED
    assert "§14.5" in UPDATE_UNREGISTERED
    assert ChannelRef("a", "ghost") not in reg


def test_an_update_is_authorized_alone_and_a_refusal_keeps_the_old_descriptor() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("secret-1", "#before"), desc("open", "#x")])
    change = reg.change(
        "a",
        updated=[desc("secret-1", "#after"), desc("open", "#y")],
        authorize=deny_secret,
    )
    assert change.results == (
        ItemResult("secret-1", False, "capability_denied"),
        ItemResult("open", True),
    )
    entry = reg.get(ChannelRef("a", "secret-1"))
    assert entry is not None
    assert entry.descriptor.label == "#before"


def test_removed_ids_may_arrive_as_numbers_and_unknown_ones_are_not_registered() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("123"), desc("g")])
    change = reg.change("a", removed=[123, "nope", "g", "g"])
    assert change.results == (
        ItemResult("123", True),
        ItemResult("nope", False, NOT_REGISTERED),
        ItemResult("g", True),
        ItemResult("g", False, NOT_REGISTERED),
    )
    assert change.removed == (ChannelRef("a", "123"), ChannelRef("a", "g"))
    assert len(reg) == 0
    assert reg.servers() == frozenset()


def test_a_removed_item_that_is_neither_a_string_nor_an_integer_is_refused_alone() -> None:
    """§11.2, T53: a bool is not the number 1, and a fraction or null names no channel."""
    reg = ChannelRegistry()
    reg.register("a", [desc("1"), desc("g")])
    change = reg.change("a", removed=[True, 1.0, None, {"id": "g"}, "g"])
    assert change.results == (
        ItemResult("True", False, INVALID_REMOVAL),
        ItemResult("1.0", False, INVALID_REMOVAL),
        ItemResult("", False, INVALID_REMOVAL),
        ItemResult("{'id': 'g'}", False, INVALID_REMOVAL),
        ItemResult("g", True),
    )
    assert change.removed == (ChannelRef("a", "g"),)
    assert ChannelRef("a", "1") in reg


def test_removing_a_channel_on_one_server_leaves_the_same_id_on_another() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("g", "#general")])
    reg.register("b", [desc("g", "#general")])
    reg.change("a", removed=["g"])
    assert [e.ref for e in reg.by_id("g")] == [ChannelRef("b", "g")]
    assert [e.ref for e in reg.by_label("general")] == [ChannelRef("b", "g")]


def test_changed_validates_added_and_updated_items_like_register() -> None:
    reg = ChannelRegistry()
    change = reg.change(
        "a",
        added=[Desc(""), Rejected("x", "bad shape")],
        updated=[Desc(""), Rejected(None, "bad shape")],
    )
    assert change.results == (
        ItemResult("", False, INVALID_ID),
        ItemResult("", False, "bad shape"),
        ItemResult("", False, INVALID_ID),
        ItemResult("x", False, "bad shape"),
    )
    assert len(reg) == 0


def test_remove_server_drops_its_entries_and_every_index_then_re_registration_works() -> None:
    reg = ChannelRegistry()
    reg.register(
        "a",
        [
            desc("g", "#general (Acme)", raw="1"),
            desc("dm1", "DM: Alice", raw="2", dm_name="alice", dm_id=42),
        ],
    )
    reg.register("b", [desc("other", "#other")])
    removed = reg.remove_server("a")
    assert removed == ("g", "dm1")
    assert reg.servers() == frozenset({"b"})
    assert len(reg) == 1
    for lookup, name in [
        (reg.by_id, "g"),
        (reg.by_qualified_name, "a:g"),
        (reg.by_raw_id, "1"),
        (reg.by_label, "#general"),
        (reg.by_label, "general (acme)"),
        (reg.by_dm_name, "@alice"),
        (reg.by_dm_name, "<@42>"),
    ]:
        assert lookup(name) == (), name
    assert reg.server_entries("a") == []
    assert reg.remove_server("a") == ()
    reg.register("a", [desc("g", "#general (Acme)", raw="1")])
    assert [e.ref for e in reg.by_label("general")] == [ChannelRef("a", "g")]
    assert [e.ref for e in reg.by_qualified_name("a:g")] == [ChannelRef("a", "g")]


def test_transport_closed_marks_only_that_servers_channels_closed() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x"), desc("y")])
    reg.register("b", [desc("x")])
    for entry in list(reg.entries()):
        reg.set_transport_open(entry.ref, True)
    reg.transport_closed("a")
    assert [e.transport_open for e in reg.server_entries("a")] == [False, False]
    assert [e.transport_open for e in reg.server_entries("b")] == [True]
    reg.transport_closed("nobody")


def test_setting_transport_state_of_an_unregistered_channel_raises_key_error() -> None:
    reg = ChannelRegistry()
    with pytest.raises(KeyError):
        reg.set_transport_open(ChannelRef("a", "g"), True)


def test_the_registry_contains_only_registered_refs() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("g")])
    assert ChannelRef("a", "g") in reg
    assert ("a", "g") in reg
    assert ChannelRef("g", "a") not in reg
    assert "a:g" not in reg
    assert ("a", 1) not in reg


def test_authorize_sees_each_descriptor_alone_in_order() -> None:
    seen: list[str] = []

    def record(descriptor: DescriptorLike) -> str | None:
        seen.append(descriptor.id)
        return None

    reg = ChannelRegistry()
    reg.register("a", [desc("1"), Rejected("skip", "bad"), desc("2")], authorize=record)
    assert seen == ["1", "2"]


def test_the_fast_accepted_result_equals_the_ordinary_one() -> None:
    fast = accepted_result("g")
    assert fast == ItemResult("g", True)
    assert (fast.id, fast.accepted, fast.reason) == ("g", True, None)
    with pytest.raises(AttributeError):
        fast.id = "h"  # type: ignore[misc]
