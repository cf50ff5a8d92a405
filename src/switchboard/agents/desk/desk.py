"""Per-agent state on the host: turns, the channels each turn owns, and the locus.

Over MCP an agent's turn is not explicit, so Switchboard defines one (docs/tools.md, "Turns"):
a turn begins each time the agent's ``inbox`` read returns messages, owns their channels, and
freezes its locus (where plain speech goes) when it begins. :class:`Desks` makes each agent's
:class:`AgentDesk` on first use, with its roster identity's settings or the ``[agent]`` table.

What it deliberately does not know: MCP, the store's cursors, connectors and delivery.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import anyio
import structlog

from switchboard.agents.desk.defaults import DefaultChannel, is_marker
from switchboard.channels import (
    NO_STICKY,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    DraftBox,
    ProseMode,
    Sticky,
)
from switchboard.channels.names.wording import q
from switchboard.store import StoredMessage
from switchboard.store.mailmark import is_mail

__all__ = ["AgentDesk", "Desks", "Identities", "Locus", "LocusFrom", "Turn"]

log = structlog.get_logger(__name__)


class DeskSettings(Protocol):
    """What a desk reads of its agent's settings (an ``[agent]`` table or a roster identity)."""

    @property
    def home(self) -> str | None: ...

    @property
    def prose(self) -> str: ...


class LocusFrom(StrEnum):
    """Where a locus came from."""

    HOME = "home"
    """The configured home channel."""
    TRIGGER = "trigger"
    """The newest non-marker message of the read that began the turn."""
    DEFAULT = "default"
    """Outside any turn: the host's default channel."""
    NONE = "none"
    """No channel: every message was a marker, the home did not resolve, or nothing arrived."""


@dataclass(frozen=True, slots=True)
class Locus:
    """Where plain speech goes, and why.

    Attributes:
        ref: The channel, or None when there is none (then ``reason`` says why).
        source: How it was chosen.
        reason: Why there is no channel, as a sentence; None when ``ref`` is set.
    """

    ref: ChannelRef | None
    source: LocusFrom
    reason: str | None = None


_NO_TURN_LOCUS = Locus(None, LocusFrom.NONE, "no turn has begun")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of one agent: its number, its own channels and its frozen locus.

    Number 0 is "no turn yet": its own set is empty and its locus is not used (the locus
    outside any turn is looked up live, see :meth:`AgentDesk.locus`).
    """

    number: int = 0
    own: frozenset[ChannelRef] = field(default_factory=frozenset)
    locus: Locus = _NO_TURN_LOCUS


def _home_locus(registry: ChannelRegistry, home: str) -> Locus:
    try:
        entry = registry.resolve(home)
    except ChannelNameError as exc:
        log.warning("home_channel_unresolved", home=home, reason=str(exc))
        return Locus(
            None,
            LocusFrom.HOME,
            f"the home channel {q(home)} does not pick exactly one registered channel now",
        )
    return Locus(entry.ref, LocusFrom.HOME)


class Identities(Protocol):
    """Where an agent's own settings are found (the roster)."""

    def get(self, name: str) -> DeskSettings | None: ...


class AgentDesk:
    """What the host keeps for one agent between its tool calls.

    Over MCP an agent's turn is not explicit, so Switchboard defines one (docs/tools.md, "Turns"):

    - **A turn begins** each time the agent's ``inbox`` read returns at least one message, and lasts
      until the next such read. Reads that return nothing change nothing. Turns are numbered from 1;
      before the first read the agent is in no turn (number 0).
    - **The turn's own channels** (channel-registry.md §3.6) are the channels of the messages that
      read returned, markers included, plus the turn's locus. Name resolution inside the turn binds
      their ids to them.
    - **The locus** (§8.4), where plain speech goes, is decided once when the turn begins and then
      frozen: the agent's home channel (config ``agent.home``, a name resolved at that moment) if
      one is configured; else the channel of the newest message of the read that is not a marker (a
      reaction, a reaction removal, an edit or a deletion,
      :func:`~switchboard.agents.desk.defaults.is_marker`). When every message of the read is a
      marker the turn deliberately has **no** channel and takes no fallback. A home that does not
      pick one channel at that moment also leaves the turn without a channel (never a guess).
    - **Outside any turn** the locus is looked up live: the home channel, else the host's default
      channel (:class:`~switchboard.agents.desk.defaults.DefaultChannel`).
    - The sticky ``>>`` target (§4.2) lives for one turn; bounced drafts (``{{unsent}}``) live for
      the agent's whole session, in one :class:`~switchboard.channels.DraftBox`.

    Attributes:
        name: The agent identity (its inbox cursor is kept under this name).
        home: The configured home channel name, or None.
        prose: How the agent's prose without a ``>>`` target is routed.
        turn: The current turn (number 0 before the first read that returned messages).
        sticky: The turn's sticky ``>>`` target state (reset when a turn begins).
        sticky_ref: The channel the sticky target resolved to when it was set, or None.
        drafts: Words that could not be delivered, for ``{{unsent}}``.
        reading: Held while an inbox read and the turn it may begin are in progress.
    """

    def __init__(self, name: str, config: DeskSettings | None = None) -> None:
        self.name = name
        self.home = config.home if config is not None else None
        self.prose = ProseMode(config.prose) if config is not None else ProseMode.HYBRID
        self.turn = Turn()
        self.sticky: Sticky = NO_STICKY
        self.sticky_ref: ChannelRef | None = None
        self.drafts = DraftBox()
        self.reading = anyio.Lock()

    @property
    def own(self) -> frozenset[ChannelRef]:
        """The current turn's own channels (empty outside any turn)."""
        return self.turn.own

    @property
    def conversation_id(self) -> str:
        """The ``conversationId`` this agent's publishes carry: the agent's name."""
        return self.name

    def begin_turn(self, messages: Iterable[StoredMessage], registry: ChannelRegistry) -> Turn:
        """Start the next turn for the ``messages`` an inbox read returned (at least one).

        Freezes the locus (home, else the newest non-marker message's channel, else none),
        collects the own channels, and clears the sticky ``>>`` target.
        """
        own: dict[ChannelRef, None] = {}
        trigger: ChannelRef | None = None
        for m in messages:
            if not m.channel_id or is_mail(m):
                continue  # a push event that names no registered channel; mail (no channel)
            ref = ChannelRef(m.server_id, m.channel_id)
            own[ref] = None
            if not is_marker(m.tags, m.metadata):
                trigger = ref
        if self.home is not None:
            locus = _home_locus(registry, self.home)
        elif trigger is not None:
            locus = Locus(trigger, LocusFrom.TRIGGER)
        else:
            locus = Locus(
                None,
                LocusFrom.NONE,
                "this turn has no channel of its own: every message that began it was a "
                "reaction, an edit or a deletion, or named no channel",
            )
        if locus.ref is not None:
            own[locus.ref] = None
        self.turn = Turn(self.turn.number + 1, frozenset(own), locus)
        self.sticky = NO_STICKY
        self.sticky_ref = None
        return self.turn

    def locus(self, registry: ChannelRegistry, default: DefaultChannel) -> Locus:
        """Where plain speech goes now: the turn's frozen locus, or outside any turn the
        home channel, else the default channel."""
        if self.turn.number > 0:
            return self.turn.locus
        if self.home is not None:
            return _home_locus(registry, self.home)
        if default.ref is not None:
            return Locus(default.ref, LocusFrom.DEFAULT)
        return Locus(None, LocusFrom.NONE, "no turn has begun and no message has arrived yet")


class Desks(dict[str, AgentDesk]):
    """Every agent's desk by name, each made on first use (:meth:`for_agent`).

    Args:
        identities: The roster: an agent's own settings, when it has an identity there.
        default: The settings of an agent without one (the ``[agent]`` table).
    """

    def __init__(self, identities: Identities, default: DeskSettings) -> None:
        super().__init__()
        self._identities = identities
        self._default = default

    def for_agent(self, name: str) -> AgentDesk:
        """The desk of the agent named ``name`` (made now if it has none)."""
        desk = self.get(name)
        if desk is None:
            identity = self._identities.get(name)
            desk = self[name] = AgentDesk(name, identity if identity is not None else self._default)
        return desk
