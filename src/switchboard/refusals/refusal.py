"""One refusal: what an agent (or a module) is told when a call, or one part of it, did nothing.

:class:`Refusal` carries a :class:`RefusalKind`, what happened, what to call instead and the
facts as data. It is raised where the decision is made and turned into a result once, at the
tool boundary; where a refusal is part of an answer (a failed publish, a bounced segment) the
same value is carried. This is the one place in the host that words next steps, and
:func:`name_refusal` the one mapping from a registry name error to a refusal.

What it deliberately does not know: MCP and result shapes, how a name was resolved, and what
each flow decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from switchboard.channels import (
    AmbiguousName,
    ChannelNameError,
    InboundOnly,
    OwnChannelGone,
    UnknownName,
)
from switchboard.directory import DirectoryError, NotFound
from switchboard.refusals.errors import HostError

__all__ = [
    "ASK_TO_CLOSE",
    "GONE",
    "NEXT_STEP",
    "RETRY",
    "Refusal",
    "RefusalKind",
    "cancel_all_except_first",
    "cancel_first",
    "candidates_of",
    "directory_refusal",
    "name_refusal",
    "only_one",
    "pass_a_source",
    "pick_a_candidate",
    "storage_refusal",
]


class RefusalKind(StrEnum):
    """Every kind of refusal (the ``refusal`` value of a result)."""

    # -- names and destinations
    UNKNOWN_CHANNEL = "unknown-channel"
    """No channel answers to the name (an empty name included), or the channel it is bound
    to is gone (``gone: true``)."""
    AMBIGUOUS_CHANNEL = "ambiguous-channel"
    """Several channels answer to the name (``candidates``); never resolved by a guess."""
    INBOUND_ONLY = "inbound-only"
    """The channel takes no words."""
    NO_CHANNEL = "no-channel"
    """No channel was named and there is none to default to (the turn has no channel)."""
    # -- publishing
    SERVER_GONE = "server-gone"
    SERVER_CONNECTING = "server-connecting"
    NOT_GRANTED = "not-granted"
    EMPTY_CONTENT = "empty-content"
    CONFLICTING_ARGUMENTS = "conflicting-arguments"
    CHANNEL_NOT_OPEN = "channel-not-open"
    """Speech would have opened the channel first, and it could not be opened (or its open was
    answered for another channel); ``lifecycle`` says which (channel-registry.md §8.3)."""
    CONNECTOR_FAILED = "connector-failed"
    """The connector answered that nothing was delivered (a publish), or answered a forwarded
    tool call with an error or with something that is not a tool result."""
    # -- arguments
    INVALID_ARGUMENTS = "invalid-arguments"
    """A tool's arguments do not match its input schema (a missing one, a wrong type, a value
    out of range): nothing ran (``tool``, ``problems``)."""
    # -- connector tools
    UNKNOWN_TOOL = "unknown-tool"
    """No tool answers to the name, or the connector no longer lists it."""
    # -- speech segments and streams
    NO_TARGET = "no-target"
    UNRESOLVED_TARGET = "unresolved-target"
    NO_UNSENT_DRAFT = "no-unsent-draft"
    UNCONFIRMED = "unconfirmed"
    """Sent but not confirmed (a segment whose status is ``unknown``)."""
    NO_STREAM = "no-stream"
    # -- lifecycle verbs
    TUNED_OUT = "tuned-out"
    NOT_RECORDED = "not-recorded"
    OPEN_FAILED = "open-failed"
    CLOSE_FAILED = "close-failed"
    OVERTAKEN = "overtaken"
    SUPERSEDED = "superseded"
    NOTHING_TO_DECLINE = "nothing-to-decline"
    EXPLICIT_OPEN = "explicit-open"
    """A module's machine close of a channel the agent opened (modules only; they stand down)."""
    UNKNOWN_SOURCE = "unknown-source"
    """A module's close named a machine source the host does not know (modules only)."""
    # -- tune-outs
    TUNED_OUT_BY_ANOTHER_AGENT = "tuned-out-by-another-agent"
    OVERLAPPING_TUNE_OUT = "overlapping-tune-out"
    NOT_TUNED_OUT = "not-tuned-out"
    # -- the inbox
    UNKNOWN_CURSOR = "unknown-cursor"
    """An ``inbox`` ``after`` token beyond the newest stored message: no read handed it out."""
    UNKNOWN_MESSAGE = "unknown-message"
    """A ``message_get`` ``seq`` that numbers no stored message."""
    STORAGE_UNAVAILABLE = "storage-unavailable"
    """The store's disk refused a write (full, I/O error, read-only): nothing was recorded,
    nothing is lost, and the same call can succeed later (``cause``)."""
    # -- mail and directory
    UNKNOWN_RECIPIENT = "unknown-recipient"
    """``agent_send`` to an address no live agent answers to (``candidates``: near misses)."""
    UNKNOWN_ADDRESS = "unknown-address"
    """A directory tool named an address nothing is listed at (``code``, ``name``)."""
    DIRECTORY_REFUSED = "directory-refused"
    """The directory refused the call: a bad address or argument (``code``, ``name``)."""
    # -- task agents
    ADDRESS_TAKEN = "address-taken"
    """``agent_spawn`` named a handle a live agent has or another owner holds (``address``;
    ``code``, ``name`` when the directory refused the claim)."""
    NOT_A_TASK = "not-a-task"
    """``task_finish`` from an agent that is not a live task agent."""
    NOT_YOUR_TASK = "not-your-task"
    """``agent_end`` of an agent that is not a live task the caller started (``handle``)."""


# -- next steps: the one place the host says what to call instead ----------------------------

RETRY = "call it again; if it fails the same way, ask whoever runs this host"
"""After a decision that could not be recorded."""
GONE = (
    "call channel_list and pass another channel's name as channel; this one is reachable "
    "again once its server registers it again"
)
"""After a channel that is gone (its server no longer registers it)."""
ASK_TO_CLOSE = "if you need it closed, ask whoever runs this host"
"""A decline of an open channel whose server keeps its channels as it chooses."""

NEXT_STEP: Mapping[RefusalKind, str] = {
    RefusalKind.UNKNOWN_CHANNEL: "call channel_list and pass one of the names it shows as channel",
    RefusalKind.AMBIGUOUS_CHANNEL: "call again with channel set to one of the candidates' names",
    RefusalKind.INBOUND_ONLY: "pick a channel whose direction is outbound or bidirectional "
    "(see channel_list)",
    RefusalKind.NO_CHANNEL: "call channel_publish again with channel set to a name from "
    "channel_list",
    RefusalKind.SERVER_GONE: "wait for the server to come back (channel_list shows its state), "
    "then retry",
    RefusalKind.SERVER_CONNECTING: "retry in a few seconds; channel_list shows when the server "
    "is ready",
    RefusalKind.NOT_GRANTED: "publish to a channel on another server; this one may not publish",
    RefusalKind.EMPTY_CONTENT: "call channel_publish with the words to send as text",
    RefusalKind.CONFLICTING_ARGUMENTS: "call again with only one of them",
    RefusalKind.CHANNEL_NOT_OPEN: "call channel_list to see the channel's state; call "
    "channel_open for it (its result says why it cannot open), or write somewhere else",
    RefusalKind.CONNECTOR_FAILED: "check the channel with channel_list; change the text or pick "
    "another channel",
    RefusalKind.INVALID_ARGUMENTS: "call the tool again with the arguments fixed as said; its "
    "input schema (in the tool list) gives every argument's name and type",
    RefusalKind.UNKNOWN_TOOL: "list the tools again (your client may need to refresh its tool "
    "list) and call one that is listed",
    RefusalKind.NO_TARGET: "start the words with a >>target line",
    RefusalKind.UNRESOLVED_TARGET: "write >> followed by a prose_target from channel_list",
    RefusalKind.NO_UNSENT_DRAFT: "write the words out instead of {{unsent}}",
    RefusalKind.UNCONFIRMED: "check the channel before sending the words again: they may have "
    "been posted",
    RefusalKind.NO_STREAM: "call speak_stream without inference_id to start a new one, or use "
    "speak",
    RefusalKind.TUNED_OUT: "see how the tune-out ends above",
    RefusalKind.NOT_RECORDED: RETRY,
    RefusalKind.OPEN_FAILED: "call channel_open again to retry now",
    RefusalKind.CLOSE_FAILED: "call channel_close again to retry now",
    RefusalKind.OVERTAKEN: "call channel_open again if you still want it",
    RefusalKind.SUPERSEDED: "call channel_close again if you still want it",
    RefusalKind.NOTHING_TO_DECLINE: "if you need it closed, call channel_close",
    RefusalKind.EXPLICIT_OPEN: "stand down",
    RefusalKind.UNKNOWN_SOURCE: "pass a machine close source the host knows",
    RefusalKind.TUNED_OUT_BY_ANOTHER_AGENT: "leave it be, or ask that agent to cancel its tune-out",
    RefusalKind.OVERLAPPING_TUNE_OUT: "cancel the tune-out it overlaps first, or leave it be",
    RefusalKind.NOT_TUNED_OUT: "call tune_out_status to see your tune-outs",
    RefusalKind.UNKNOWN_CURSOR: "pass the cursor of your latest inbox result as after, or call "
    "inbox without after to read what is still owed to you",
    RefusalKind.UNKNOWN_MESSAGE: "pass the seq of a message an inbox result showed you",
    RefusalKind.STORAGE_UNAVAILABLE: "call it again later; the host's storage refused the "
    "write (tell whoever runs this host if it persists)",
    RefusalKind.UNKNOWN_RECIPIENT: "call directory_search to find the address, or agent_send "
    "to one of the candidates",
    RefusalKind.UNKNOWN_ADDRESS: "call directory_search or directory_list to see what is listed",
    RefusalKind.DIRECTORY_REFUSED: "fix the argument the message names and call again",
    RefusalKind.ADDRESS_TAKEN: "call agent_spawn again with another handle",
    RefusalKind.NOT_A_TASK: "only a task agent finishes; reply with agent_send or in a channel",
    RefusalKind.NOT_YOUR_TASK: "end only tasks your own agent_spawn started; leave this one be",
}
"""The next step of each kind, unless the refusal names a more precise one."""


def pick_a_candidate(tool: str, server_arg: str | None = "server_id") -> str:
    """After an ambiguous name: call ``tool`` again with one candidate's name."""
    text = f"call {tool} again with channel set to one of the candidates' names; "
    if server_arg is None:
        return text + f"{tool} cannot reach a candidate whose name is null"
    return (
        text + "for a candidate whose name is null, pass its channel_id as channel and its "
        f"server_id as {server_arg}"
    )


def only_one(tool: str, arg: str) -> str:
    """After two arguments that disagree: call ``tool`` again with ``arg`` alone."""
    return f"call {tool} again with only {arg}"


def pass_a_source(allowed: str) -> str:
    """After a machine close source the host does not know."""
    return f"pass source as one of: {allowed}"


def cancel_first(shown: str) -> str:
    """After a tune-out that would overlap the owner's tune-out of channel ``shown``."""
    return f'cancel it first (tune_out with channel {shown} and mode "cancel")'


def cancel_all_except_first(kept: str) -> str:
    """After a tune-out inside the owner's tune-out of every channel but ``kept``."""
    return (
        f'cancel that one first (tune_out with channel {kept}, scope "all-except" and mode '
        '"cancel"), or leave it be'
    )


# -- the refusal ------------------------------------------------------------------------------


class Refusal(HostError):
    """A call, or one part of it, that did nothing, with what to tell the caller.

    What it knows:

    - :class:`RefusalKind`, every kind of refusal the host and its tools can produce. docs/tools.md
      lists exactly this set ("Refusals"); tests/agents/tools/test_refusal_kinds.py holds the two
      together.
    - :class:`Refusal`, the one refusal type: its kind, what happened (``message``), what to call
      instead (``next_step``) and the facts as data (``candidates``, ``suggestions``, ``server_id``,
      ``channel_id``, ``gone``, ...). It is an exception, raised where the decision is made (a
      lifecycle verb, a tune-out decision, a tool) and turned into a result once, at the tool
      boundary (:mod:`switchboard.agents.tools.results`). Where a refusal is data rather than the
      failure of a whole call (a failed publish inside a ``speak`` result, a bounced segment) the
      same type is carried as a value (:attr:`PublishOutcome.refusal
      <switchboard.refusals.outcome.PublishOutcome.refusal>`).
    - :func:`name_refusal`, the one mapping from a name error of the registry
      (:class:`~switchboard.channels.ChannelNameError`) to a refusal. An empty name (or an empty
      server id beside it, :class:`~switchboard.channels.InvalidName`) is ``unknown-channel``: no
      channel answers to it.
    - The next steps: what each refusal tells the agent to call instead. This is the one place in
      the host that words them; the pure ``channels`` layer names no tool.

    Raise it where the decision is made; the tool boundary turns it into an ``isError``
    result whose ``_meta`` facts are ``refusal`` (the kind), ``message``, ``next`` and the
    data. Where a refusal is part of a larger answer it is carried as a value instead.

    Attributes:
        kind: Which refusal.
        message: What happened, and what did not, as sentences.
        next_step: What to call instead (the kind's :data:`NEXT_STEP` unless given).
        stand_down: For a module caller: not an error but a decision to stand down on
            (``explicit-open``, or a tuned-out channel a module tried to close). Agents' tools
            never produce one.
        data: The facts, as the result's ``_meta`` carries them (``candidates``,
            ``suggestions``, ``server_id``, ``channel_id``, ``gone``, ``lifecycle``, ...).
    """

    def __init__(
        self,
        kind: RefusalKind,
        message: str,
        next_step: str | None = None,
        *,
        stand_down: bool = False,
        **data: Any,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.next_step = NEXT_STEP[kind] if next_step is None else next_step
        self.stand_down = stand_down
        self.data: Mapping[str, Any] = data

    def __repr__(self) -> str:
        return f"Refusal({self.kind.value!r}, {self.message!r})"

    @property
    def server_id(self) -> str | None:
        """The server concerned, when the refusal names one."""
        value = self.data.get("server_id")
        return value if isinstance(value, str) else None

    @property
    def channel_id(self) -> str | None:
        """The channel concerned, when the refusal names one."""
        value = self.data.get("channel_id")
        return value if isinstance(value, str) else None

    def adding(self, **data: Any) -> Refusal:
        """The same refusal with more data (what the tool adds on the way out)."""
        merged = {**self.data, **data}
        return Refusal(
            self.kind, self.message, self.next_step, stand_down=self.stand_down, **merged
        )

    def as_kind(self, kind: RefusalKind) -> Refusal:
        """The same message and data under another kind, with that kind's next step (a name
        refused inside speech is ``unresolved-target``)."""
        return Refusal(kind, self.message, stand_down=self.stand_down, **self.data)


# -- names ------------------------------------------------------------------------------------


def candidates_of(exc: AmbiguousName) -> list[dict[str, Any]]:
    """The candidates of an ambiguous name, as data: each channel and the name picking it."""
    return [
        {
            "server_id": c.ref.server_id,
            "channel_id": c.ref.channel_id,
            "name": c.name,
            "label": c.label,
            "gone": c.gone,
        }
        for c in exc.choices
    ]


def name_refusal(
    exc: ChannelNameError, tool: str, *, server_arg: str | None = "server_id"
) -> Refusal:
    """The refusal a name error amounts to, for a call of ``tool`` (the one mapping).

    Args:
        exc: What the registry refused.
        tool: The tool whose call it was (the next step names it).
        server_arg: The tool's argument that takes a server id, or None when it has none.
    """
    message = str(exc)
    if isinstance(exc, AmbiguousName):
        return Refusal(
            RefusalKind.AMBIGUOUS_CHANNEL,
            message,
            pick_a_candidate(tool, server_arg),
            candidates=candidates_of(exc),
        )
    if isinstance(exc, OwnChannelGone):
        return Refusal(
            RefusalKind.UNKNOWN_CHANNEL,
            message,
            GONE,
            server_id=exc.ref.server_id,
            channel_id=exc.ref.channel_id,
            gone=True,
        )
    if isinstance(exc, UnknownName):
        return Refusal(RefusalKind.UNKNOWN_CHANNEL, message, suggestions=list(exc.suggestions))
    if isinstance(exc, InboundOnly):
        return Refusal(
            RefusalKind.INBOUND_ONLY,
            message,
            server_id=exc.ref.server_id,
            channel_id=exc.ref.channel_id,
        )
    # InvalidName: an empty name (or server id) is one no channel answers to.
    return Refusal(RefusalKind.UNKNOWN_CHANNEL, message, suggestions=[])


def storage_refusal(cause: str, what: str) -> Refusal:
    """The refusal of a call whose write the store's disk refused (``storage-unavailable``).

    Args:
        cause: what the storage said (``database or disk is full``).
        what: what was not recorded, as the end of a sentence (``this read``).
    """
    return Refusal(
        RefusalKind.STORAGE_UNAVAILABLE,
        f"The host's storage is unavailable ({cause}), so {what} could not be recorded and "
        "nothing changed; no message is lost: everything not acknowledged stays owed to you.",
        cause=cause,
    )


def directory_refusal(
    exc: DirectoryError,
    address: str | None = None,
    *,
    kind: RefusalKind | None = None,
    said: str | None = None,
) -> Refusal:
    """The refusal a directory error amounts to for an agent's tool (code and name as data):
    ``unknown-address`` for a missing entry, else ``directory-refused``, unless ``kind`` is
    given; ``said`` replaces the message."""
    facts: dict[str, Any] = {"code": exc.code, "name": exc.name}
    if address is not None:
        facts["address"] = address
    if kind is None:
        kind = (
            RefusalKind.UNKNOWN_ADDRESS
            if isinstance(exc, NotFound)
            else (RefusalKind.DIRECTORY_REFUSED)
        )
    return Refusal(kind, said or f"{exc}; nothing changed.", **facts)
