"""Per-agent state on the host: the agent's turns and the channels each turn owns.

Over MCP an agent's turn is not explicit. Switchboard defines it (docs/tools.md): a turn begins
each time the agent's ``inbox`` read returns messages, and lasts until the next such read. The
channels of the messages that read returned are the turn's *own* channels
(channel-registry.md §3.6), and name resolution inside the turn binds their ids to them.

This module knows one agent's turn; it knows nothing of MCP, the store or connectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from switchboard.channels import ChannelRef


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of one agent: its number and the channels it owns."""

    number: int = 0
    own: frozenset[ChannelRef] = field(default_factory=frozenset)


class AgentDesk:
    """What the host keeps for one agent between its tool calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.turn = Turn()

    @property
    def own(self) -> frozenset[ChannelRef]:
        """The current turn's own channels (empty outside any turn)."""
        return self.turn.own
