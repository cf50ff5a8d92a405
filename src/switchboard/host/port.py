"""The port the agent-facing tools use: what one agent may ask of the host, typed.

What this module knows: :class:`AgentPort`, the operations the tools of ONE agent need (list
the channels, publish, speak, read the inbox (which begins a turn and gathers its context),
open, close and decline a channel, start, cancel, list and read tune-outs, show typing, stream
speech), and the values they take and return. An operation that refuses the whole call raises
a :class:`~switchboard.host.refusal.Refusal` (converted once, at the tool boundary); a publish
and each segment of speech carry theirs as a value, in the answer. Who is calling, and which
channels are the turn's own, come from the agent the port was made for, never from an
argument.

The values are host-level: rows (:class:`ChannelRow`), outcomes (:class:`AgentPublish`),
speech (:class:`Speech`), lifecycle answers (:class:`LifecycleAnswer`), tune-outs
(:class:`ActiveTuneOut` and what an operation did to one), stored messages. The tools turn them
into results; this module re-exports the ones defined deeper in the host so that the tools
import the port's vocabulary from one place.

The implementation is :class:`~switchboard.host.agent.port.BoardPort`, made by
:func:`switchboard.host.agent_port`.

What it deliberately does not know: MCP and result shapes, and how any operation is carried
out (sessions, the registry, the config and the host's parts stay behind the port).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from switchboard.channels import ChannelRef, TuneOutTerms
from switchboard.channels.lifecycle.decisions import ScopeKind
from switchboard.channels.tuneouts.epochs import DEFAULT_BACKLOG_CAP, ActiveTuneOut
from switchboard.host.agent.publishing import AgentPublish
from switchboard.host.agent.speech import SegmentStatus, Speech, SpokenSegment
from switchboard.host.agent.streams import SpeechEnd, Streamed
from switchboard.host.agent.views import ChannelRow
from switchboard.host.connection.diagnostics import DisabledFeatureSet
from switchboard.host.lifecycle.answers import LifecycleAnswer
from switchboard.host.lifecycle.verbs import MAX_BACKSCROLL
from switchboard.host.tuneouts.host import StartedTuneOut
from switchboard.store import StoredMessage

__all__ = [
    "DEFAULT_BACKLOG_CAP",
    "MAX_BACKSCROLL",
    "ActiveTuneOut",
    "AgentPort",
    "AgentPublish",
    "AgentRead",
    "CancelledTuneOut",
    "ChannelListing",
    "ChannelRow",
    "DisabledFeatureSet",
    "LifecycleAnswer",
    "ScopeKind",
    "SegmentStatus",
    "Speech",
    "SpeechEnd",
    "SpokenSegment",
    "StartedTuneOut",
    "StreamFed",
    "Streamed",
    "TuneOutPage",
    "TypingIn",
    "message_text",
]


@dataclass(frozen=True, slots=True)
class ChannelListing:
    """What ``channel_list`` shows: every registered channel, and every server's state.

    Attributes:
        rows: The registered channels, in registry order, named for the agent's turn.
        servers: Each configured (or connected) server id and its state (``connecting``,
            ``ready``, ``mcp-only``, ``closed``; ``disconnected`` before its first session).
        disabled_feature_sets: For each server whose current session left feature sets
            disabled, those sets (only servers with at least one).
    """

    rows: Sequence[ChannelRow]
    servers: Mapping[str, str]
    disabled_feature_sets: Mapping[str, Sequence[DisabledFeatureSet]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentRead:
    """One inbox read of the agent.

    Attributes:
        messages: What arrived since the last read (owed tune-out backlogs first).
        cursor: The sequence number of the last message returned.
        more: More messages are waiting.
        context: What the connectors added when this read began a turn (empty when it did
            not begin one).
    """

    messages: Sequence[StoredMessage]
    cursor: int
    more: bool
    context: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class CancelledTuneOut:
    """A tune-out the agent cancelled: the epoch as it was, and where its withheld range ends."""

    held: ActiveTuneOut
    end_seq: int


@dataclass(frozen=True, slots=True)
class TuneOutPage:
    """One page of what a tune-out withheld, oldest first; ``cursor`` reads on."""

    held: ActiveTuneOut
    messages: Sequence[StoredMessage]
    cursor: int
    more: bool


@dataclass(frozen=True, slots=True)
class TypingIn:
    """A channel the agent's ``typing`` call turned on or off.

    Attributes:
        ref: The channel.
        shown: Its server may show typing (it is granted ``channels.typing``).
    """

    ref: ChannelRef
    shown: bool


@dataclass(frozen=True, slots=True)
class StreamFed:
    """What one piece of streamed speech did: the stream's id and the text shown live."""

    inference_id: str
    streamed: tuple[Streamed, ...]


def message_text(message: StoredMessage) -> str:
    """The text blocks of ``message`` joined by newlines (other blocks are left out)."""
    return "\n".join(
        str(b.get("text", ""))
        for b in message.content
        if isinstance(b, dict) and b.get("type") == "text"
    )


class AgentPort(Protocol):
    """What the tools of one agent may ask of the host (see the module docstring).

    Names a channel is shown by are judged with the agent's current turn, so that each one
    resolves back to the channel it is shown for.
    """

    @property
    def agent(self) -> str:
        """The agent this port serves."""
        ...

    @property
    def turn(self) -> int:
        """The agent's current turn number (0 before its first read that returned messages)."""
        ...

    def locus_shown(self) -> str | None:
        """Where plain speech goes now, as a name; None when nowhere."""
        ...

    def name_shown(self, ref: ChannelRef, *, in_turn: bool = True) -> str:
        """The name that picks ``ref`` (judged without the turn when not ``in_turn``)."""
        ...

    def target_shown(self, ref: ChannelRef) -> str:
        """The ``>>`` target that reaches ``ref`` in speech, else its name."""
        ...

    # -- channels, publish, speech, inbox -------------------------------------------------

    def channels(self) -> ChannelListing:
        """Every registered channel as the agent sees it, and the servers' states."""
        ...

    async def publish(
        self, text: str, *, channel: str | None = None, server_id: str | None = None
    ) -> AgentPublish:
        """Publish ``text`` to ``channel`` (without one: the locus); a refusal is the outcome's."""
        ...

    async def speak(self, text: str) -> Speech:
        """Speak prose with ``>>`` lines; what became of each segment is the answer."""
        ...

    async def read_inbox(self, *, wait_seconds: float = 0.0, limit: int = 50) -> AgentRead:
        """Read the inbox; a read that returns messages begins the next turn."""
        ...

    # -- lifecycle --------------------------------------------------------------------------

    async def open(
        self,
        channel: str,
        *,
        server_id: str | None = None,
        backscroll: int = 0,
        before_message_id: str | None = None,
    ) -> LifecycleAnswer:
        """Open ``channel`` for the agent (``backscroll`` is clamped to 0..MAX_BACKSCROLL)."""
        ...

    async def close(self, channel: str, *, server_id: str | None = None) -> LifecycleAnswer:
        """Close ``channel`` for the agent."""
        ...

    async def decline(
        self,
        channel: str,
        *,
        message_id: str,
        server_id: str | None = None,
        acknowledge: str | None = None,
    ) -> LifecycleAnswer:
        """Stay out of ``channel`` after ``message_id`` addressed the agent there."""
        ...

    # -- tune-outs --------------------------------------------------------------------------

    def tune_outs(self) -> list[ActiveTuneOut]:
        """The tune-outs the agent owns or reads."""
        ...

    async def start_tune_out(
        self, channel: str, scope: ScopeKind, terms: TuneOutTerms
    ) -> StartedTuneOut:
        """Tune out ``channel`` (``scope`` all-except: every channel but it)."""
        ...

    async def cancel_tune_out(
        self, channel: str, scope: ScopeKind, digest: str | None = None
    ) -> CancelledTuneOut:
        """End the agent's tune-out of ``channel`` (as its owner or its reader)."""
        ...

    async def tune_out_backlog(
        self, channel: str, scope: ScopeKind, *, after_seq: int, limit: int
    ) -> TuneOutPage:
        """Read on in what the agent's tune-out of ``channel`` withheld."""
        ...

    # -- presence ---------------------------------------------------------------------------

    async def typing(
        self, channel: str, *, on: bool, server_id: str | None = None, refreshes: int
    ) -> list[TypingIn]:
        """Start (for ``refreshes`` refreshes) or stop typing in the channels ``channel`` names."""
        ...

    async def stream(self, text: str, *, inference_id: str | None = None) -> StreamFed:
        """Feed the next piece of streamed speech (without an id: start a stream)."""
        ...

    async def end_stream(
        self, inference_id: str, *, text: str = "", abort: bool = False
    ) -> SpeechEnd[Speech]:
        """Deliver the stream's whole text as :meth:`speak` would (``abort``: deliver nothing)."""
        ...
