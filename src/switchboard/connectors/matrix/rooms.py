"""The rooms the bridge is in, as far as it knows them, and each room as an MCPL channel.

:class:`Room` keeps the state of one joined room that matters to a channel and makes its
descriptor (the room id, its name or alias or, for a direct chat, the other person);
:class:`DirectRooms` reads which rooms are direct chats from the account's ``m.direct``.

What it deliberately does not know: the network, the grant, or what was sent to the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from switchboard.protocol import ChannelDescriptor

__all__ = [
    "CHANNEL_TYPE",
    "DirectRooms",
    "Room",
    "localpart",
]

CHANNEL_TYPE: Final = "matrix"
_HERO_NAMES: Final = 3


def localpart(user_id: str) -> str:
    """``ann`` for ``@ann:example.org`` (the user id itself when it has no such shape)."""
    if user_id.startswith("@") and ":" in user_id:
        return user_id[1:].split(":", 1)[0]
    return user_id


@dataclass(slots=True)
class Room:
    """One joined room's state, as it matters to its channel.

    What it knows:

    - the state of one joined room that matters to a channel: its name, canonical alias, whether it
      is end-to-end encrypted (``m.room.encryption``), whether it is a space, and its members'
      display names (``m.room.member``), kept up to date from state events in the order they arrive;
    - which rooms are direct chats, from the bridge account's ``m.direct`` account data (user id →
      room ids), turned around to room id → the other person;
    - the channel descriptor of a room: id = the room id, type ``matrix``, label = the room's name,
      else its canonical alias, else (for a direct chat) ``DM: <the other person>``, else the
      members it has; ``address.channelId`` carries the room id; ``initiallyOpen`` (the bridge is in
      the room because someone wanted it there); a DM carries ``metadata.channelType "dm"`` with
      ``recipientId`` and ``recipientName``, which Switchboard's ``@name`` lookup uses.
    """

    room_id: str
    name: str | None = None
    canonical_alias: str | None = None
    encrypted: bool = False
    space: bool = False
    names: dict[str, str | None] = field(default_factory=dict)
    """Joined and invited members: user id → display name (``None`` when they set none)."""

    def apply_state(self, event: Mapping[str, Any]) -> bool:
        """Take one state event; returns whether anything the channel shows changed."""
        kind = event.get("type")
        key = event.get("state_key")
        content = event.get("content")
        if not isinstance(kind, str) or not isinstance(key, str):
            return False
        if not isinstance(content, Mapping):
            content = {}
        if kind == "m.room.name" and key == "":
            name = content.get("name")
            new = name.strip() if isinstance(name, str) and name.strip() else None
            changed, self.name = new != self.name, new
            return changed
        if kind == "m.room.canonical_alias" and key == "":
            alias = content.get("alias")
            new = alias if isinstance(alias, str) and alias else None
            changed, self.canonical_alias = new != self.canonical_alias, new
            return changed
        if kind == "m.room.encryption" and key == "":
            changed, self.encrypted = not self.encrypted, True
            return changed
        if kind == "m.room.create" and key == "":
            space = content.get("type") == "m.space"
            changed, self.space = space != self.space, space
            return changed
        if kind == "m.room.member":
            return self._member(key, content)
        return False

    def _member(self, user_id: str, content: Mapping[str, Any]) -> bool:
        membership = content.get("membership")
        if membership in ("join", "invite"):
            shown = content.get("displayname")
            name = shown.strip() if isinstance(shown, str) and shown.strip() else None
            if user_id in self.names and self.names[user_id] == name:
                return False
            self.names[user_id] = name
            return True
        return self.names.pop(user_id, False) is not False

    def display_name(self, user_id: str) -> str:
        """What the room calls ``user_id``: the display name, else the localpart."""
        return self.names.get(user_id) or localpart(user_id)

    def others(self, own_user_id: str) -> list[str]:
        """The members other than the bridge, sorted by user id."""
        return sorted(user for user in self.names if user != own_user_id)

    def label(self, own_user_id: str, partner: str | None) -> str:
        """The channel's label (see :class:`Room`)."""
        if self.name:
            return self.name
        if self.canonical_alias:
            return self.canonical_alias
        if partner is not None:
            return f"DM: {self.display_name(partner)}"
        others = self.others(own_user_id)
        if not others:
            return f"Empty room ({self.room_id})"
        shown = ", ".join(self.display_name(user) for user in others[:_HERO_NAMES])
        rest = len(others) - _HERO_NAMES
        return shown if rest <= 0 else f"{shown} and {rest} others"

    def descriptor(self, own_user_id: str, partner: str | None) -> ChannelDescriptor:
        """The room as an MCPL channel; ``partner`` is the other person of a direct chat."""
        metadata: dict[str, Any]
        if partner is not None:
            metadata = {
                "channelType": "dm",
                "recipientId": partner,
                "recipientName": self.display_name(partner),
            }
        else:
            metadata = {"channelType": "room"}
        if self.canonical_alias:
            metadata["canonicalAlias"] = self.canonical_alias
        return ChannelDescriptor(
            id=self.room_id,
            type=CHANNEL_TYPE,
            label=self.label(own_user_id, partner),
            direction="bidirectional",
            address={"channelId": self.room_id},
            metadata=metadata,
            initially_open=True,
        )


class DirectRooms:
    """The bridge account's direct chats: ``m.direct`` turned into room id → other person."""

    __slots__ = ("_by_room", "content")

    def __init__(self) -> None:
        self.content: dict[str, list[str]] = {}
        self._by_room: dict[str, str] = {}

    def partner(self, room_id: str) -> str | None:
        """The other person of the direct chat ``room_id``, or ``None`` for a room."""
        return self._by_room.get(room_id)

    def load(self, content: Mapping[str, Any]) -> set[str]:
        """Replace the map from ``m.direct`` content; returns the rooms whose status changed."""
        fresh: dict[str, list[str]] = {}
        for user, rooms in content.items():
            if isinstance(user, str) and isinstance(rooms, list):
                fresh[user] = [room for room in rooms if isinstance(room, str)]
        by_room = {room: user for user, rooms in fresh.items() for room in rooms}
        changed = {
            room
            for room in set(by_room) | set(self._by_room)
            if by_room.get(room) != self._by_room.get(room)
        }
        self.content, self._by_room = fresh, by_room
        return changed

    def with_room(self, user_id: str, room_id: str) -> dict[str, list[str]] | None:
        """The ``m.direct`` content with ``room_id`` added for ``user_id`` (``None``: there)."""
        rooms = self.content.get(user_id, [])
        if room_id in rooms:
            return None
        return {**self.content, user_id: [*rooms, room_id]}

    def rooms(self) -> Iterable[str]:
        return self._by_room.keys()
