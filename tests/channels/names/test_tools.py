"""Channel tool arguments (§3.4-§3.9): shared names, wrong servers, own channels, sends."""

from __future__ import annotations

import pytest

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.channels.names.errors import (
    AmbiguousName,
    InvalidName,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.tiers import Tier
from switchboard.channels.names.wording import DELIVER, POST, RUN
from tests.channels.channels_support import desc

A_GENERAL = ChannelRef("a", "general")
B_GENERAL = ChannelRef("b", "general")


def two_generals() -> ChannelRegistry:
    reg = ChannelRegistry()
    reg.register("a", [desc("general")])
    reg.register("b", [desc("general")])
    return reg


def refused(call: object, *args: object, **kwargs: object) -> Exception:
    assert callable(call)
    with pytest.raises((AmbiguousName, UnknownName, InvalidName)) as caught:
        call(*args, **kwargs)
    return caught.value


def test_a_shared_id_is_refused_for_a_tool_with_both_names_and_the_server_id_way() -> None:
    reg = two_generals()
    error = refused(reg.names.resolve_tool_channel, "general")
    assert isinstance(error, AmbiguousName)
    text = str(error)
    assert '"a:general"' in text
    assert '"b:general"' in text
    assert "nothing ran" in text
    assert 'server_id to "a" or "b"' in text


def test_a_shared_id_is_refused_for_a_publish_without_offering_a_server_id() -> None:
    reg = two_generals()
    error = refused(reg.names.resolve_destination, "general")
    text = str(error)
    assert "nothing was posted" in text
    assert "server_id" not in text
    assert '"a:general"' in text


def test_a_qualified_name_opens_the_channel_by_its_own_id() -> None:
    reg = two_generals()
    entry = reg.names.resolve_tool_channel("a:general")
    assert entry.ref == A_GENERAL
    assert entry.ref.channel_id == "general"


def test_the_t07_layout_tells_a_tool_to_use_id_and_server_and_a_publish_that_it_cannot() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("b:room")])
    reg.register("a:b", [desc("room")])
    reg.register("c", [desc("b:room")])
    reg.register("x", [desc("room")])
    tool = str(refused(reg.names.resolve_tool_channel, "a:b:room"))
    assert 'channel_id "b:room" and server_id "a"' in tool
    assert 'channel_id "room" and server_id "a:b"' in tool
    publish = str(refused(reg.names.resolve_destination, "a:b:room"))
    assert publish.count("no name picks it alone") == 2
    assert "server_id" not in publish
    assert reg.names.name_shown(ChannelRef("a", "b:room")) == '"b:room" on server "a"'


def test_one_servers_room_and_s_room_are_both_named_in_the_refusal() -> None:
    reg = ChannelRegistry()
    reg.register("s", [desc("room"), desc("s:room")])
    text = str(refused(reg.names.resolve_tool_channel, "s:room"))
    assert '"room"' in text
    assert '"s:s:room"' in text
    assert 'server "s"' in text


def test_an_id_given_with_the_wrong_server_says_which_server_has_it() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x")])
    error = refused(reg.names.resolve_tool_channel, "x", server_id="b")
    assert isinstance(error, UnknownName)
    text = str(error)
    assert 'Server "b" has no channel "x"' in text
    assert "nothing ran" in text
    assert 'server_id "a"' in text
    assert "leave server_id out" in text
    assert error.suggestions == ("x",)


def test_a_qualified_name_given_with_a_server_says_what_it_alone_names() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x")])
    error = refused(reg.names.resolve_tool_channel, "a:x", server_id="b")
    text = str(error)
    assert '"a:x" alone names channel "x" on server "a"' in text
    assert "without server_id" in text


def test_a_publish_to_a_server_without_the_id_lists_where_it_is() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x")])
    reg.register("b", [desc("x")])
    error = refused(reg.names.resolve_destination, "x", server_id="c")
    text = str(error)
    assert 'on server "a" as "a:x" and on server "b" as "b:x"' in text
    assert "nothing was posted" in text
    tool = str(refused(reg.names.resolve_tool_channel, "x", server_id="c"))
    assert 'servers "a" and "b"' in tool


def test_an_empty_server_id_is_absent_for_tools_and_refused_for_destinations() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x")])
    assert reg.names.resolve_tool_channel("x", server_id="").ref == ChannelRef("a", "x")
    assert isinstance(refused(reg.names.resolve_destination, "x", server_id=""), InvalidName)
    assert isinstance(refused(reg.names.resolve_destination, ""), InvalidName)
    # The general resolver treats "" as a given server id, which registers nothing.
    assert isinstance(refused(reg.resolve, "x", server_id=""), UnknownName)


def test_tools_accept_only_ids_and_qualified_names() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", "#lbl", raw="9")])
    error = refused(reg.names.resolve_tool_channel, "#lbl")
    assert isinstance(error, UnknownName)
    assert "channel id or server-qualified name" in str(error)
    assert error.suggestions == ("x",)


def test_the_turns_own_channel_wins_over_another_servers_channel_with_that_id() -> None:
    reg = two_generals()
    own = {A_GENERAL}
    assert reg.names.resolve_destination("general", own=own).ref == A_GENERAL
    assert reg.names.resolve_tool_channel("general", own=own).ref == A_GENERAL
    assert reg.resolve("general", own=own).ref == A_GENERAL
    assert reg.names.name_for(A_GENERAL, own) == "general"
    assert reg.names.name_for(B_GENERAL, own) == "b:general"


def test_the_own_channel_stays_bound_after_its_server_withdraws_it() -> None:
    reg = two_generals()
    reg.change("a", removed=["general"])
    with pytest.raises(OwnChannelGone) as caught:
        reg.names.resolve_destination("general", own={A_GENERAL}, caller=POST)
    text = str(caught.value)
    assert caught.value.ref == A_GENERAL
    assert 'server "a"' in text
    assert "no longer registers it" in text
    assert "nothing was posted" in text
    assert isinstance(caught.value, UnknownName)
    with pytest.raises(OwnChannelGone):
        reg.resolve("general", own={A_GENERAL})
    # A server id lifts the own rule.
    assert reg.names.resolve_tool_channel("general", server_id="b", own={A_GENERAL}).ref == (
        B_GENERAL
    )


def test_own_channels_on_two_servers_sharing_an_id_are_refused_with_their_names() -> None:
    reg = two_generals()
    error = refused(reg.names.resolve_tool_channel, "general", own={A_GENERAL, B_GENERAL})
    assert isinstance(error, AmbiguousName)
    assert error.own
    assert error.tier is Tier.OWN
    assert set(error.names) == {"a:general", "b:general"}
    assert "this turn's own channels" in str(error)


def test_an_own_channel_that_is_gone_is_listed_as_gone_among_the_shared() -> None:
    reg = two_generals()
    reg.change("a", removed=["general"])
    error = refused(reg.resolve, "general", own=[A_GENERAL, B_GENERAL])
    assert isinstance(error, AmbiguousName)
    assert [c.gone for c in error.choices] == [True, False]  # sorted: a before b
    assert "no longer registers it" in str(error)


def test_own_channel_for_is_none_when_no_own_channel_has_the_id() -> None:
    reg = two_generals()
    assert reg.names.own_channel_for("general", {ChannelRef("a", "other")}) is None
    assert reg.names.own_channel_for("general", {A_GENERAL}) is not None
    with pytest.raises(OwnChannelGone):
        reg.names.own_channel_for("gone", {ChannelRef("a", "gone")}, caller=DELIVER)


def test_a_shared_name_refusal_is_offered_to_tools_outside_the_registry() -> None:
    reg = two_generals()
    reg.register("c", [desc("solo")])
    assert reg.names.shared_name_refusal("solo") is None
    error = reg.names.shared_name_refusal("general", caller=DELIVER)
    assert error is not None
    assert "nothing was delivered" in str(error)
    assert "server_id" not in str(error)


def test_send_targets_use_ids_then_raw_ids_and_never_qualified_names() -> None:
    reg = ChannelRegistry()
    reg.register("a", [desc("x", raw="r1"), desc("y", raw="r2")])
    reg.register("b", [desc("x"), desc("z", raw="r2")])
    names = reg.names
    assert [e.ref for e in names.send_targets("x")] == [ChannelRef("a", "x"), ChannelRef("b", "x")]
    assert names.resolve_send_target("x") is None
    assert names.resolve_send_target("x", server_id="b") == ChannelRef("b", "x")
    assert names.resolve_send_target("r1") == ChannelRef("a", "x")
    assert names.resolve_send_target("r2") is None
    assert names.resolve_send_target("r2", server_id="b") == ChannelRef("b", "z")
    assert names.send_targets("a:x") == ()


def test_the_default_lookup_caller_is_used_by_the_registry() -> None:
    reg = two_generals()
    assert "no channel was chosen" in str(refused(reg.resolve, "general"))
    assert "nothing ran" in str(refused(reg.names.resolve, "general", caller=RUN))
