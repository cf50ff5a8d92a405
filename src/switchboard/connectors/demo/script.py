"""Demo Town: its people, its rooms and what they say — pure data and a seeded chooser.

What this module knows: the three channels of the demo community (``demo:#general``,
``demo:#random`` and a DM with Carol) as MCPL descriptors, the three people (Alice, Bob and
Carol), a small built-in script of lines, which tags each kind of message carries (§16:
ambient room chatter, a DM, a reply that addresses the agent), and two deterministic
choices: the next ambient line for a seed, and who answers a question the agent asked.

What it deliberately does not know: time, the wire, or the SDK. :mod:`.town` drives it.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from switchboard.protocol import ChannelDescriptor

__all__ = [
    "ALICE",
    "BOB",
    "CAROL",
    "DM_CAROL",
    "GENERAL",
    "PEOPLE",
    "RANDOM",
    "ROOMS",
    "ROOMS_BY_ID",
    "Chatter",
    "Line",
    "Person",
    "Room",
    "answer_to",
    "descriptors",
]

CHANNEL_TYPE: Final = "demo"


@dataclass(frozen=True, slots=True)
class Person:
    """Someone in Demo Town."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Room:
    """A channel of Demo Town.

    Attributes:
        id: the MCPL channel id.
        raw_id: the platform's own id, carried in ``address.channelId``.
        label: the human label.
        dm_with: the other person, for a direct-message room.
    """

    id: str
    raw_id: str
    label: str
    dm_with: Person | None = None

    def descriptor(self) -> ChannelDescriptor:
        """The room as an MCPL channel descriptor (bidirectional)."""
        metadata = (
            None
            if self.dm_with is None
            else {
                "channelType": "dm",
                "recipientName": self.dm_with.name,
                "recipientId": self.dm_with.id,
            }
        )
        return ChannelDescriptor(
            id=self.id,
            type=CHANNEL_TYPE,
            label=self.label,
            direction="bidirectional",
            address={"channelId": self.raw_id},
            metadata=metadata,
        )

    def tags(self) -> tuple[str, ...]:
        """Tags of a person's ordinary message in this room."""
        if self.dm_with is not None:
            return ("chat:dm", "chat:addressed", "chat:private", "chat:from-human")
        return ("chat:ambient", "chat:group", "chat:from-human")

    def reply_tags(self) -> tuple[str, ...]:
        """Tags of a person's answer to the agent in this room."""
        if self.dm_with is not None:
            return ("chat:reply", "chat:dm", "chat:addressed", "chat:private", "chat:from-human")
        return ("chat:reply", "chat:addressed", "chat:group", "chat:from-human")


ALICE: Final = Person("u-alice", "Alice")
BOB: Final = Person("u-bob", "Bob")
CAROL: Final = Person("u-carol", "Carol")
PEOPLE: Final = (ALICE, BOB, CAROL)

GENERAL: Final = Room("demo:#general", "c-100", "#general (Demo Town)")
RANDOM: Final = Room("demo:#random", "c-101", "#random (Demo Town)")
DM_CAROL: Final = Room("demo:dm:carol", "c-200", "DM: Carol", dm_with=CAROL)
ROOMS: Final = (GENERAL, RANDOM, DM_CAROL)

_ROOM_LINES: Final[dict[str, tuple[str, ...]]] = {
    GENERAL.id: (
        "morning, everyone",
        "the build is green again",
        "who is on call this week?",
        "I pushed the release notes draft",
        "lunch at noon, anyone?",
        "the staging database restarts at five",
        "nice work on the search page",
    ),
    RANDOM.id: (
        "look, a heron on the canal",
        "the coffee machine is making that noise again",
        "anyone read a good book lately?",
        "rain tomorrow, bring an umbrella",
        "my cat walked across the keyboard and filed a bug",
    ),
    DM_CAROL.id: (
        "hey, do you have a minute later?",
        "thanks for the help yesterday",
        "I left some notes in the shared folder for you",
    ),
}

_ANSWERS: Final = (
    "good question - I think so, yes",
    "not sure, let me check and get back to you",
    "probably tomorrow; I'll confirm",
    "yes, that's right",
)


@dataclass(frozen=True, slots=True)
class Line:
    """Something a person says in a room."""

    room: Room
    person: Person
    text: str
    reply_to: str | None = None

    def tags(self) -> tuple[str, ...]:
        """The message's event tags."""
        return self.room.reply_tags() if self.reply_to is not None else self.room.tags()


class Chatter:
    """Picks ambient lines; the same seed gives the same conversation. A room says each of its
    lines once before any of them again (a person asking the same question twice in a short
    demo reads as a bug)."""

    __slots__ = ("_decks", "_random")

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._decks: dict[str, list[str]] = {}

    def _line_of(self, room: Room) -> str:
        deck = self._decks.get(room.id)
        if not deck:
            deck = list(_ROOM_LINES[room.id])
            self._random.shuffle(deck)
            self._decks[room.id] = deck
        return deck.pop()

    def next(self, open_rooms: Collection[str]) -> Line | None:
        """The next line said in one of ``open_rooms`` (ids), or ``None`` if none is open."""
        rooms = [room for room in ROOMS if room.id in open_rooms]
        if not rooms:
            return None
        room = self._random.choice(rooms)
        person = room.dm_with or self._random.choice(PEOPLE)
        return Line(room, person, self._line_of(room))


def answer_to(room: Room, number: int, message_id: str) -> Line:
    """The answer to the agent's ``number``-th question, quoting its ``message_id``.

    In a DM the other person answers; in a room the people take turns (Bob first).
    """
    person = room.dm_with or (BOB, ALICE, CAROL)[(number - 1) % 3]
    text = f"(re {message_id}) {_ANSWERS[(number - 1) % len(_ANSWERS)]}"
    return Line(room, person, text, reply_to=message_id)


def descriptors() -> list[ChannelDescriptor]:
    """The descriptors of every room, in registration order."""
    return [room.descriptor() for room in ROOMS]


ROOMS_BY_ID: Final = {room.id: room for room in ROOMS}
