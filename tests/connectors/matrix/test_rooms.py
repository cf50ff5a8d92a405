"""Rooms as channels: the label the host shows, direct chats naming the other person, and
which state changes the channel."""

from __future__ import annotations

from typing import Any

from switchboard.connectors.matrix.rooms import DirectRooms, Room

BOT = "@bot:example.org"
ANN = "@ann:example.org"


def _state(kind: str, content: dict[str, Any], key: str = "") -> dict[str, Any]:
    return {"type": kind, "state_key": key, "content": content}


def _member(user: str, name: str | None, membership: str = "join") -> dict[str, Any]:
    content: dict[str, Any] = {"membership": membership}
    if name is not None:
        content["displayname"] = name
    return _state("m.room.member", content, user)


def test_the_label_is_the_name_then_the_alias_then_the_dm_partner_then_the_members() -> None:
    room = Room("!r:example.org")
    for event in (_member(BOT, "Bot"), _member(ANN, "Ann"), _member("@bo:example.org", None)):
        room.apply_state(event)
    assert room.label(BOT, None) == "Ann, bo"
    assert room.label(BOT, ANN) == "DM: Ann"
    room.apply_state(_state("m.room.canonical_alias", {"alias": "#lobby:example.org"}))
    assert room.label(BOT, ANN) == "#lobby:example.org"
    room.apply_state(_state("m.room.name", {"name": " Lobby "}))
    assert room.label(BOT, None) == "Lobby"
    room.apply_state(_state("m.room.name", {}))
    assert room.label(BOT, None) == "#lobby:example.org"


def test_a_room_with_many_members_names_three_and_counts_the_rest() -> None:
    room = Room("!r:example.org")
    for i in range(6):
        room.apply_state(_member(f"@u{i}:example.org", f"U{i}"))
    assert room.label(BOT, None) == "U0, U1, U2 and 3 others"
    assert Room("!empty:example.org").label(BOT, None) == "Empty room (!empty:example.org)"


def test_a_dm_descriptor_names_the_other_person_for_the_hosts_at_name_lookup() -> None:
    room = Room("!dm:example.org")
    room.apply_state(_member(ANN, "Ann"))
    descriptor = room.descriptor(BOT, ANN)
    assert descriptor.id == "!dm:example.org"
    assert descriptor.type == "matrix"
    assert descriptor.address == {"channelId": "!dm:example.org"}
    assert descriptor.metadata == {"channelType": "dm", "recipientId": ANN, "recipientName": "Ann"}
    assert descriptor.initially_open is True


def test_only_state_the_channel_shows_counts_as_a_change() -> None:
    room = Room("!r:example.org")
    assert room.apply_state(_member(ANN, "Ann"))
    assert not room.apply_state(_member(ANN, "Ann"))
    assert not room.apply_state(_state("m.room.topic", {"topic": "news"}))
    assert room.apply_state(_member(ANN, None, "leave"))
    assert not room.apply_state(_member(ANN, None, "leave"))
    assert room.apply_state(_state("m.room.encryption", {"algorithm": "m.megolm.v1.aes-sha2"}))
    assert room.encrypted
    assert room.apply_state(_state("m.room.create", {"type": "m.space"}))
    assert room.space


def test_m_direct_is_read_as_room_to_person_and_reports_which_rooms_changed() -> None:
    direct = DirectRooms()
    assert direct.load({ANN: ["!a:x", "!b:x"], "@bo:x": ["!c:x"], "junk": "nope"}) == {
        "!a:x",
        "!b:x",
        "!c:x",
    }
    assert direct.partner("!b:x") == ANN
    assert direct.partner("!z:x") is None
    assert direct.load({ANN: ["!a:x"], "@bo:x": ["!c:x"]}) == {"!b:x"}
    assert direct.with_room(ANN, "!a:x") is None
    assert direct.with_room(ANN, "!d:x") == {ANN: ["!a:x", "!d:x"], "@bo:x": ["!c:x"]}
