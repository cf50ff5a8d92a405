"""The port the agent-facing tools use: what one agent may ask of the host, typed.

:class:`AgentPort` is every operation the tools of one agent need, and the values they take
and return; who calls comes from the agent the port was made for, never from an argument. An
operation that refuses the whole call raises a ``Refusal`` (turned into a result once, at the
tool boundary); a publish and each segment of speech carry theirs in the answer. It is
implemented once, by :class:`~switchboard.agents.port.service.AgentService`; this module
re-exports the values defined deeper so the tools import the port's vocabulary from one place.

What it deliberately does not know: MCP and result shapes, and how any operation is carried
out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from switchboard.agents.desk.views import ChannelRow
from switchboard.agents.inbox.delivery import PageBudget
from switchboard.agents.inbox.mail import Deposit
from switchboard.agents.inbox.watch import Arrival, message_text
from switchboard.agents.roster.lifetimes import EndedAgent, SpawnedTask
from switchboard.agents.roster.samplers import Sampler, SamplerGone
from switchboard.agents.speech.publishing import AgentPublish
from switchboard.agents.speech.speech import SegmentStatus, Speech, SpokenSegment
from switchboard.agents.speech.streams import SpeechEnd, Streamed
from switchboard.channels import ChannelRef
from switchboard.connections.connector_tools import ConnectorTool
from switchboard.connections.diagnostics import DisabledFeatureSet
from switchboard.connections.inference import InferenceAnswer, InferenceAsk, SamplingFailed
from switchboard.directory import Entry as DirectoryEntry
from switchboard.directory import Page as DirectoryPage
from switchboard.lifecycle.answers import LifecycleAnswer
from switchboard.lifecycle.rules.decisions import ScopeKind
from switchboard.lifecycle.verbs import MAX_BACKSCROLL
from switchboard.store import StoredMessage
from switchboard.store.mailmark import MAIL_SERVER, is_mail
from switchboard.tuneouts.host import StartedTuneOut
from switchboard.tuneouts.rules.epochs import DEFAULT_BACKLOG_CAP, ActiveTuneOut, TuneOutTerms

__all__ = [
    "DEFAULT_BACKLOG_CAP",
    "MAIL_SERVER",
    "MAX_BACKSCROLL",
    "ActiveTuneOut",
    "AgentPort",
    "AgentPublish",
    "AgentRead",
    "Arrival",
    "CancelledTuneOut",
    "ChannelListing",
    "ChannelRow",
    "ConnectorTool",
    "Deposit",
    "DirectoryEntry",
    "DirectoryPage",
    "DisabledFeatureSet",
    "EndedAgent",
    "InferenceAnswer",
    "InferenceAsk",
    "LifecycleAnswer",
    "PageBudget",
    "Sampler",
    "SamplerGone",
    "SamplingFailed",
    "ScopeKind",
    "SegmentStatus",
    "SpawnedTask",
    "Speech",
    "SpeechEnd",
    "SpokenSegment",
    "StartedTuneOut",
    "StreamFed",
    "Streamed",
    "TuneOutPage",
    "TuneOutTerms",
    "TypingIn",
    "is_mail",
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
        messages: What is owed above the acknowledged position (owed tune-out backlogs
            first); owed until a later read acknowledges this one.
        cursor: The token that acknowledges this read (``after`` of a later read).
        more: More messages are waiting.
        context: What the connectors added when this read began a turn (empty when it did
            not begin one).
        redelivered: One flag per message: an earlier read handed it out.
    """

    messages: Sequence[StoredMessage]
    cursor: int
    more: bool
    context: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    redelivered: Sequence[bool] = field(default_factory=tuple)


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

    @property
    def prose_mode(self) -> str:
        """How ``speak`` routes prose for this agent (config ``agent.prose``): ``locus``,
        ``explicit``, ``hybrid`` or ``disabled``."""
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

    def server_states(self) -> Mapping[str, str]:
        """Each configured (or connected) server id and its state, as in
        :attr:`ChannelListing.servers` (without listing the channels: O(servers))."""
        ...

    async def publish(
        self, text: str, *, channel: str | None = None, server_id: str | None = None
    ) -> AgentPublish:
        """Publish ``text`` to ``channel`` (without one: the locus); a refusal is the outcome's."""
        ...

    async def speak(self, text: str) -> Speech:
        """Speak prose with ``>>`` lines; what became of each segment is the answer."""
        ...

    async def read_inbox(
        self,
        *,
        after: int | None = None,
        reader: object | None = None,
        wait_seconds: float = 0.0,
        limit: int = 50,
        budget: PageBudget | None = None,
        request: Hashable | None = None,
    ) -> AgentRead:
        """Acknowledge ``after`` (else ``reader``'s previous read; ``reader`` is the MCP
        connection, None for the port's own), then read what is owed, cut at a message
        boundary to ``budget`` (its cursor acknowledges only what it returns); a read that
        returns messages, redelivered or not, begins the next turn. Refuses an ``after`` no
        read handed out (``unknown-cursor``). ``request`` is the id of the call the read
        answers over ``reader`` (for :meth:`take_back_read`)."""
        ...

    def take_back_read(self, reader: object | None, request: Hashable) -> bool:
        """The call ``request`` over ``reader`` was cancelled, perhaps after its read answered:
        if that read is still ``reader``'s latest, forget it, so that the next read returns
        its page again (flagged redelivered) instead of acknowledging it. Whether it did."""
        ...

    async def stored_message(self, seq: int) -> StoredMessage | None:
        """The stored message numbered ``seq`` (an inbox message's ``seq``), or None."""
        ...

    async def peek_inbox(self, *, limit: int = 50) -> Sequence[StoredMessage]:
        """What is owed above the acknowledged position, oldest first, at most ``limit``: what
        a tune-out withholds is left out. Acknowledges nothing, begins no turn, counts no
        wake and marks nothing delivered; owed tune-out backlogs are not shown."""
        ...

    def watch_inbox(
        self,
        listener: Callable[[Sequence[Arrival]], None],
        details: Callable[[], bool] | None = None,
    ) -> None:
        """Call ``listener`` with each batch of messages committed for the agent, in commit
        order (what a tune-out in effect diverts is left out). It runs inside the host's
        event bus: it must not block. It is called for as long as the host runs.

        ``details``, when given, is asked before each batch whether the listener wants the
        messages: while it answers False the listener is told only *that* a batch for the
        agent arrived (an empty sequence), which costs one routing check per batch rather
        than one :class:`Arrival` per message (the ingest hot path)."""
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

    # -- connector tools --------------------------------------------------------------------

    def connector_tools(self) -> list[ConnectorTool]:
        """The MCP tools of every connector that is ready and granted ``tools``, by server id
        and then in the connector's order."""
        ...

    async def call_connector_tool(
        self, server_id: str, tool: str, arguments: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """Call the tool ``tool`` of ``server_id``; the connector's result object as it came.

        Raises:
            Refusal: The server is gone, still connecting, not granted ``tools`` (or runs
                without MCPL), no longer lists the tool, answered with an error or with no
                result object (``connector-failed``), or did not answer (``unconfirmed``: the
                tool may have run).
        """
        ...

    def offer_sampling(self, key: Hashable, sampler: Sampler | None, client: str) -> None:
        """A session of this agent began (``key`` names its connection): ``sampler`` when its
        client declared sampling, so connectors' ``inference/request`` may be asked of it;
        ``None`` when it did not (remembered to say so). ``client`` is its name and version."""
        ...

    def watch_connector_tools(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever :meth:`connector_tools` may have changed (a connector's
        list was fetched anew or dropped, or a manifest change narrowed a grant). It runs
        inside the host's event bus: it must not block. It is called for as long as the host
        runs."""
        ...

    # -- mail and directory -----------------------------------------------------------------

    @property
    def many_agents(self) -> bool:
        """Whether agents share this Switchboard (``[[agents]]`` is configured, or a task was
        started): the mail, directory and task tools are listed only then."""
        ...

    @property
    def is_task(self) -> bool:
        """Whether this agent is a task agent (``task_finish`` is listed only to one)."""
        ...

    async def send_mail(self, to: str, text: str) -> Deposit:
        """Deposit ``text`` as mail from this agent to the address ``to`` (``@agent``, or a
        service address, which lands with the agent holding it).

        Raises:
            Refusal: ``empty-content``; ``unknown-recipient`` (with near-miss ``candidates``).
        """
        ...

    def directory_list(
        self,
        *,
        prefix: str | None = None,
        tag: str | None = None,
        kind: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> DirectoryPage:
        """The directory entries matching every filter given, a page at a time (no tokens).

        Raises:
            Refusal: ``directory-refused`` (a bad filter or page).
        """
        ...

    def directory_search(self, text: str, *, limit: int = 50, offset: int = 0) -> DirectoryPage:
        """The entries whose address, capability, description or a tag contains ``text``.

        Raises:
            Refusal: ``directory-refused`` (empty text, a bad page).
        """
        ...

    def directory_lookup(self, address: str) -> DirectoryEntry:
        """The entry at ``address``.

        Raises:
            Refusal: ``unknown-address``; ``directory-refused`` (an invalid address).
        """
        ...

    def set_busy(self, busy: bool) -> DirectoryEntry:
        """Mark this agent's own ``@handle`` entry busy or idle.

        Raises:
            Refusal: ``unknown-address`` (the agent has no entry).
        """
        ...

    # -- task agents ------------------------------------------------------------------------

    def spawn_task(
        self,
        handle: str,
        *,
        description: str = "",
        deadline_seconds: float | None = None,
        idle_timeout_seconds: float | None = None,
        turn_limit: int | None = None,
        home: str | None = None,
    ) -> SpawnedTask:
        """Start the task agent ``handle`` with this agent as its parent; its token is in the
        answer, and nowhere else.

        Raises:
            Refusal: ``address-taken``; ``directory-refused`` (not an agent handle).
        """
        ...

    async def finish_task(self, result: str) -> EndedAgent:
        """End this task agent (``finished``) and mail ``result`` to its parent.

        Raises:
            Refusal: ``not-a-task``.
        """
        ...

    async def end_task(self, handle: str) -> EndedAgent:
        """End ``handle``, a task this agent started (``ended-by-parent``).

        Raises:
            Refusal: ``not-your-task``.
        """
        ...
