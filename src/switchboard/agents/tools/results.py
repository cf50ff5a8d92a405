"""Typed results of the agent-facing tools, and the tool boundary where refusals become results.

Results are pydantic models, so every tool has an output schema. A ``Refusal`` raised anywhere
becomes, once, an ``isError`` result whose text says what happened and what to call next and
whose ``_meta`` carries the same facts as data (:func:`refusal_boundary`). Every answer is
bounded in bytes where it is built, never by cutting JSON text (docs/tools.md, "Bounded
answers").

What it deliberately does not know: why anything is refused, and the words of next steps.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, ParamSpec

import structlog
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import (
    MAIL_SERVER,
    AgentPort,
    ChannelRow,
    DisabledFeatureSet,
    SegmentStatus,
    Speech,
    SpokenSegment,
    message_text,
)
from switchboard.refusals.outcome import PublishOutcome
from switchboard.refusals.refusal import Refusal, RefusalKind
from switchboard.store import StoredMessage

__all__ = [
    "CONTEXT_BYTES",
    "INBOX_PAGE_BYTES",
    "MAX_ANSWER_BYTES",
    "MESSAGE_BYTES",
    "REFUSAL_META",
    "ChannelInfo",
    "ChannelListResult",
    "DisabledSetInfo",
    "InboxMessage",
    "InboxResult",
    "PublishResult",
    "SegmentResult",
    "SpeakResult",
    "ThinkResult",
    "answer_bytes",
    "bounded",
    "bounded_context",
    "connecting_note",
    "cut_text",
    "fitting",
    "inbox_answer",
    "inbox_line",
    "inbox_message_size",
    "json_bytes",
    "mail_label",
    "message_fields",
    "ok",
    "ok_size",
    "refusal_boundary",
    "refused",
    "still_connecting",
]

log = structlog.get_logger(__name__)

MAX_ANSWER_BYTES = 512 * 1024
"""The most bytes one tool answer may take, serialized (text and structured content).

Half of the 1 MiB event limit of the MCP SDKs' SSE readers: the JSON-RPC envelope, an SSE
frame and a client's own re-encoding fit in the rest, and a page is measured before it is
sent, never cut afterwards."""

MESSAGE_BYTES = 16 * 1024
"""The most bytes of one message's text (and of its structured content) an inbox page shows;
the rest is fetched with ``message_get``."""

CONTEXT_BYTES = 32 * 1024
"""The most bytes of connector context one inbox answer carries (each of text, structured)."""

_METADATA_BYTES = 8 * 1024
"""A message's connector metadata larger than this is left out of a page (message_get has it)."""

_ANSWER_OVERHEAD = 8 * 1024
"""Room for an inbox answer's header line and fields besides its messages and context."""

INBOX_PAGE_BYTES = MAX_ANSWER_BYTES - 2 * CONTEXT_BYTES - _ANSWER_OVERHEAD
"""What an inbox page's messages may take in all (each counted as line plus structure)."""


def json_bytes(value: Any) -> int:
    """The bytes ``value`` takes serialized as JSON (UTF-8, escapes counted)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def answer_bytes(result: CallToolResult) -> int:
    """The bytes ``result`` takes serialized as a JSON-RPC result."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def cut_text(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose JSON string takes at most ``max_bytes``."""
    if json_bytes(text) <= max_bytes:
        return text
    low, high = 0, min(len(text), max_bytes)
    while low < high:
        mid = (low + high + 1) // 2
        if json_bytes(text[:mid]) <= max_bytes:
            low = mid
        else:
            high = mid - 1
    return text[:low]


REFUSAL_META = "switchboard/refusal"
"""The ``_meta`` key of a refusal's facts as data (a key of our own, as MCP asks of ``_meta``)."""


class ChannelInfo(BaseModel):
    name: str | None = Field(
        description="The channel id or serverId:channelId that picks this channel alone; "
        "pass it as `channel`. null when no string does: then pass channel_id with server_id."
    )
    prose_target: str | None = Field(
        description="What to write after >> in speak to reach this channel; null when speech "
        "cannot go there (an inbound-only channel)."
    )
    server_id: str
    channel_id: str
    label: str
    type: str
    direction: Literal["inbound", "outbound", "bidirectional"] | str
    open: bool = Field(
        description="Whether the channel is open at the connector (confirmed by an answered "
        "open or by traffic)."
    )
    desired: str = Field(
        description="What was decided for the channel: open, closed or tuned-out; default when "
        "nobody decided (the host's defaults apply: docs/lifecycle.md). Not a problem."
    )

    @classmethod
    def of(cls, row: ChannelRow) -> ChannelInfo:
        return cls(
            name=row.name,
            prose_target=row.prose_target,
            server_id=row.ref.server_id,
            channel_id=row.ref.channel_id,
            label=row.label,
            type=row.type,
            direction=row.direction,
            open=row.open,
            desired=row.desired,
        )


class DisabledSetInfo(BaseModel):
    """One feature set a server's policy exchange left disabled."""

    name: str
    reason: str = Field(
        description="invalid_uses, capability_denied, not_selected or disabled (MCPL §6)."
    )
    missing: list[str] = Field(description="The uses its grant does not cover.")
    enable_with: str | None = Field(
        description="The config line that would enable it, or null when none can."
    )
    why_not: str | None = Field(description="Why no config line enables it, when none can.")

    @classmethod
    def of(cls, disabled: DisabledFeatureSet) -> DisabledSetInfo:
        return cls(
            name=disabled.name,
            reason=disabled.reason,
            missing=list(disabled.missing),
            enable_with=disabled.enable_with,
            why_not=disabled.why_not,
        )


def ok_size(item: BaseModel) -> int:
    """What ``item`` adds to an :func:`ok` answer: its JSON in the structured content and,
    escaped, in the text."""
    dumped = item.model_dump_json()
    return len(dumped.encode()) + json_bytes(dumped) + 2


def fitting(items: Sequence[BaseModel], room: int) -> int:
    """How many of ``items``, from the first, fit ``room`` bytes of an :func:`ok` answer (at
    least one, so a page always makes progress)."""
    kept = 0
    for item in items:
        room -= ok_size(item)
        if room < 0 and kept:
            break
        kept += 1
    return kept


STILL_CONNECTING: Final = ("connecting", "disconnected")
"""The server states in which a server's channels are not registered yet."""


def connecting_note(servers: Mapping[str, str]) -> str | None:
    """What to tell an agent while servers are still connecting (their channels are not
    registered yet, so none of their names is known), or None when none is."""
    waiting = sorted(sid for sid, state in servers.items() if state in STILL_CONNECTING)
    if not waiting:
        return None
    named = ", ".join(repr(sid) for sid in waiting)
    which = "server" if len(waiting) == 1 else "servers"
    return (
        f"Still connecting to {which} {named}: its channels are not registered yet, so they "
        "are not listed and their names are not known. Try again in a moment (channel_list "
        "shows each server's state; inbox with wait_seconds waits for the first messages)."
    )


def still_connecting(refusal: Refusal, servers: Mapping[str, str]) -> Refusal:
    """``refusal`` as said while servers are still connecting: an ``unknown-channel`` for a
    name no registered channel answers to may name a channel that is not registered yet, so
    it says so and to try again shortly (a client that calls at once, such as the Inspector's
    CLI starting a fresh Switchboard per call, sees this first)."""
    if refusal.kind is not RefusalKind.UNKNOWN_CHANNEL or refusal.data.get("gone"):
        return refusal
    note = connecting_note(servers)
    if note is None:
        return refusal
    said = refusal.message.rstrip()
    if not said.endswith((".", "!", "?")):
        said += "."
    waiting = [sid for sid, state in servers.items() if state in STILL_CONNECTING]
    return Refusal(
        refusal.kind,
        f"{said} {note.split(':', 1)[0]}, so the channel may not be registered yet.",
        "call channel_list in a moment, and once every server it shows is ready, pass one of "
        "the names it shows as channel",
        **{**refusal.data, "connecting": waiting},
    )


class ChannelListResult(BaseModel):
    channels: list[ChannelInfo]
    next_cursor: int | None = Field(
        default=None,
        description="More channels follow: pass it as cursor to list the next page. null on "
        "the last page.",
    )
    total: int = Field(default=0, description="How many channels there are in all.")
    servers: dict[str, str] = Field(description="Each configured server and its state.")
    note: str | None = Field(
        default=None,
        description="Set while a server is still connecting: its channels are not listed yet; "
        "call channel_list again in a moment.",
    )
    disabled_feature_sets: dict[str, list[DisabledSetInfo]] = Field(
        default_factory=dict,
        description="Per server, the feature sets its grant or selection left disabled "
        "(servers with none are left out).",
    )


class PublishResult(BaseModel):
    status: Literal["delivered", "failed", "unknown"]
    channel: str | None = Field(
        default=None, description="The channel it went to, named as channel_list names it."
    )
    server_id: str | None
    channel_id: str | None
    message_id: str | None = Field(default=None, description="The connector's id, if delivered.")
    reason: str | None = None
    defaulted: bool = Field(
        default=False,
        description="No channel was named: it went to the turn's locus (or the default).",
    )

    @classmethod
    def of(
        cls, outcome: PublishOutcome, *, channel: str | None = None, defaulted: bool = False
    ) -> PublishResult:
        return cls(
            status=outcome.status.value,
            channel=channel,
            server_id=outcome.server_id,
            channel_id=outcome.channel_id,
            message_id=outcome.message_id,
            reason=outcome.reason,
            defaulted=defaulted,
        )


class InboxMessage(BaseModel):
    seq: int = Field(description="Its place in the store; message_get(seq) fetches it whole.")
    channel: str | None = Field(
        default=None,
        description="Its channel, named as channel_list names it; null for mail (server_id "
        "@mail, metadata.kind mail: reply with agent_send to metadata.from).",
    )
    server_id: str
    channel_id: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    timestamp: str
    text: str = Field(description="The message's text blocks joined by newlines.")
    content: list[dict[str, Any]] | None = Field(
        default=None,
        description="Every content block in order, when the message has blocks other than "
        "text; null when text says it all.",
    )
    truncated: str | None = Field(
        default=None,
        description="Set when the message was too large for a page: what was cut and how to "
        "fetch it whole (message_get).",
    )
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="The connector's metadata; Switchboard's own notices (a tune-out's end) "
        "carry their kind and reason here.",
    )
    redelivered: bool = Field(
        default=False,
        description="An earlier read handed this message out and it was not acknowledged: "
        "you may have seen it (message_id is stable).",
    )

    @classmethod
    def of(
        cls, m: StoredMessage, *, channel: str | None = None, redelivered: bool = False
    ) -> InboxMessage:
        """``m`` as a page shows it: its text and blocks cut to :data:`MESSAGE_BYTES`, its
        metadata left out past a bound, with a note naming what was cut."""
        text = message_text(m)
        shown = cut_text(text, MESSAGE_BYTES)
        content, cut_blocks = _blocks(m.content)
        metadata = m.metadata
        cut: list[str] = []
        if shown != text:
            cut.append(f"its text ({len(shown):,} of {len(text):,} characters shown)")
        if cut_blocks:
            cut.append(f"{cut_blocks} content block{'' if cut_blocks == 1 else 's'}")
        if metadata is not None and json_bytes(metadata) > _METADATA_BYTES:
            metadata = None
            cut.append("its metadata")
        note = None
        if cut:
            note = (
                f"Too large for a page: {' and '.join(cut)} cut. "
                f"message_get(seq={m.seq}) fetches it whole."
            )
        if m.server_id == MAIL_SERVER:
            channel = None  # mail is in no channel: reply with agent_send
        return cls(
            **message_fields(m, channel),
            text=shown,
            content=content,
            truncated=note,
            tags=m.tags,
            metadata=metadata,
            redelivered=redelivered,
        )


def message_fields(m: StoredMessage, channel: str | None) -> dict[str, Any]:
    """What names a stored message in every tool result that shows one: where it is (its
    ``channel`` as the agent is shown it), which it is, who wrote it and when."""
    return {
        "seq": m.seq,
        "channel": channel,
        "server_id": m.server_id,
        "channel_id": m.channel_id,
        "message_id": m.message_id,
        "thread_id": m.thread_id,
        "author_id": m.author_id,
        "author_name": m.author_name,
        "timestamp": m.timestamp,
    }


def _blocks(content: Sequence[Any]) -> tuple[list[dict[str, Any]] | None, int]:
    """A message's blocks as a page carries them, and how many were cut: none when all are
    text (``text`` holds them); else all, within :data:`MESSAGE_BYTES` (a text block past it is
    shortened, any other block past it replaced by its type and size)."""
    blocks = [b for b in content if isinstance(b, dict)]
    if all(b.get("type") == "text" for b in blocks):
        return None, 0
    room = MESSAGE_BYTES
    kept: list[dict[str, Any]] = []
    cut = 0
    for block in blocks:
        size = json_bytes(block)
        if size <= room:
            kept.append(block)
            room -= size
            continue
        cut += 1
        if block.get("type") == "text":
            short = cut_text(str(block.get("text", "")), max(room - 32, 0))
            kept.append({"type": "text", "text": short})
            room -= json_bytes(kept[-1])
        else:
            kept.append({"type": block.get("type"), "omitted_bytes": size})
    return kept, cut


def inbox_line(m: InboxMessage) -> str:
    """The chat line of ``m`` in an inbox answer's text (docs/tools.md, "inbox")::

        2026-11-29T12:00:00Z [general] Ann: welcome! (id m-12)

    Newlines in the text are shown as ``\\n``; blocks that are not text are counted, a
    redelivery and a cut are said after the id. Mail shows :func:`mail_label` where a channel
    message shows its channel::

        2026-11-29T12:00:00.000Z [mail #3 from @alice, sent to weather] alice: hi (id @alice#3)
    """
    text = m.text.replace("\r\n", "\n").replace("\n", "\\n")
    channel = mail_label(m.server_id, m.metadata) or m.channel or f"{m.server_id}:{m.channel_id}"
    extra = ""
    if m.content is not None:
        others = sum(1 for b in m.content if b.get("type") != "text")
        extra = f" [+{others} non-text block{'s' if others != 1 else ''}]" if others else ""
    tail = f"id {m.message_id}"
    if m.redelivered:
        tail += ", redelivered"
    line = f"{m.timestamp} [{channel}] {m.author_name}: {text}{extra} ({tail})"
    return f"{line} {m.truncated}" if m.truncated else line


def mail_label(server_id: str, metadata: Mapping[str, Any] | None) -> str | None:
    """How mail is named where a message shows its channel: ``mail #3 from @alice`` (and
    ``, sent to weather`` when it was sent to a service address); None for a channel message.
    """
    if server_id != MAIL_SERVER:
        return None
    meta = metadata or {}
    label = f"mail #{meta.get('n', '?')} from {meta.get('from', '?')}"
    address = meta.get("address")
    if isinstance(address, str) and address != meta.get("to"):
        label += f", sent to {address}"
    return label


def inbox_message_size(m: InboxMessage) -> int:
    """What ``m`` adds to an inbox answer: its line (escaped) plus its structured JSON."""
    return json_bytes(inbox_line(m)) + len(m.model_dump_json().encode()) + 4


class InboxResult(BaseModel):
    messages: list[InboxMessage]
    cursor: int = Field(
        description="Pass it as after in your next inbox call to acknowledge these messages; "
        "until acknowledged they are owed and come again."
    )
    more: bool = Field(description="True when more messages are waiting: call inbox again.")
    redelivered: int = Field(
        default=0, description="How many of the messages an earlier read handed out already."
    )
    turn: int = Field(
        description="Your current turn: a read that returns messages begins the next one."
    )
    locus: str | None = Field(
        description="Where plain speech and channel_publish without a channel go now; null "
        "when this turn has no channel."
    )
    context: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Context the connectors add when this read begins a turn.",
    )
    context_left_out: int = Field(
        default=0, description="How many context items were too large for the answer."
    )


def bounded_context(items: Sequence[Any]) -> tuple[list[dict[str, Any]], int]:
    """The context items that fit :data:`CONTEXT_BYTES`, in order, and how many did not."""
    kept: list[dict[str, Any]] = []
    room = CONTEXT_BYTES
    for item in items:
        size = json_bytes(dict(item))
        if size <= room:
            kept.append(dict(item))
            room -= size
    return kept, len(items) - len(kept)


def inbox_answer(result: InboxResult) -> CallToolResult:
    """The inbox answer: a header line, one chat line per message and one line per context
    item as text; the full detail as structured content only."""
    n = len(result.messages)
    said = f"{n} message{'s' if n != 1 else ''}" if n else "No new messages"
    facts = [
        f"cursor {result.cursor}",
        f"more: {'yes, call inbox again' if result.more else 'no'}",
        f"turn {result.turn}",
        f"locus {result.locus or 'none'}",
    ]
    if result.redelivered:
        facts.append(f"{result.redelivered} redelivered")
    lines = [f"{said} ({'; '.join(facts)}). Pass after={result.cursor} to acknowledge them."]
    lines += [inbox_line(m) for m in result.messages]
    lines += [f"context: {json.dumps(c, ensure_ascii=False)}" for c in result.context]
    if result.context_left_out:
        left = result.context_left_out
        lines.append(f"context: {left} item{'' if left == 1 else 's'} too large, left out")
    return bounded(
        CallToolResult(
            content=[TextContent(type="text", text="\n".join(lines))],
            structured_content=result.model_dump(mode="json"),
        )
    )


class SegmentResult(BaseModel):
    status: SegmentStatus = Field(
        description="delivered; failed (nothing was sent); unknown (sent, not confirmed: do "
        "not resend blindly); bounced (no target, or one that does not pick one channel); "
        "private (>>skip_reply); withheld (prose routing disabled); empty (a target line "
        "with no words)."
    )
    target: str | None = Field(description="The >> target as written; null for plain prose.")
    channel: str | None = Field(description="Where it went or was meant to go, as a >> target.")
    server_id: str | None = None
    channel_id: str | None = None
    message_id: str | None = None
    refusal: str | None = None
    reason: str | None = None
    kept_as_draft: bool = Field(
        default=False, description="Its words were kept: write {{unsent}} to send them later."
    )

    @classmethod
    def of(cls, s: SpokenSegment, channel: str | None) -> SegmentResult:
        """``s``, with ``channel`` the ``>>`` target (or name) shown for its channel."""
        return cls(
            status=s.status,
            target=s.target,
            channel=channel,
            server_id=None if s.ref is None else s.ref.server_id,
            channel_id=None if s.ref is None else s.ref.channel_id,
            message_id=s.message_id,
            refusal=None if s.refusal is None else s.refusal.kind.value,
            reason=s.reason,
            kept_as_draft=s.kept,
        )


class SpeakResult(BaseModel):
    segments: list[SegmentResult]
    mode: Literal["locus", "explicit", "hybrid", "disabled"]
    sticky: str | None = Field(
        description="The target plain prose goes to for the rest of this turn, if any."
    )
    turn: int
    locus: str | None

    @classmethod
    def of(cls, port: AgentPort, speech: Speech) -> SpeakResult:
        """What ``speech`` did, each channel named as a ``>>`` target in ``port``'s turn."""
        return cls(
            segments=[
                SegmentResult.of(s, None if s.ref is None else port.target_shown(s.ref))
                for s in speech.segments
            ],
            mode=speech.mode.value,
            sticky=speech.sticky,
            turn=port.turn,
            locus=port.locus_shown(),
        )


class ThinkResult(BaseModel):
    noted: bool
    note: str


def refused(refusal: Refusal) -> CallToolResult:
    """The ``isError`` tool result of ``refusal``: what happened and what to do next.

    The words are the text content, which every client shows its model; the facts are
    ``_meta[REFUSAL_META]``, for programs. No ``structuredContent``: a tool's output schema
    describes its successful result, and a refusal is not one.
    """
    said = refusal.message.rstrip()
    if not said.endswith((".", "!", "?")):
        said += "."  # "... nothing was done. Next: ...", never "done Next:"
    facts = {
        "refusal": refusal.kind.value,
        "message": said,
        "next": refusal.next_step,
        **refusal.data,
    }
    return CallToolResult(
        content=[TextContent(type="text", text=f"{said} Next: {refusal.next_step}")],
        is_error=True,
        _meta={REFUSAL_META: facts},
    )


_P = ParamSpec("_P")


def refusal_boundary(
    tool: Callable[_P, Awaitable[CallToolResult]],
) -> Callable[_P, Awaitable[CallToolResult]]:
    """The tool boundary: a :class:`Refusal` raised inside ``tool`` becomes its result.

    Results are pydantic models, so every tool has an output schema and returns structured content.
    A refusal is a :class:`~switchboard.refusals.refusal.Refusal`, raised wherever the decision is
    made; :func:`refusal_boundary` wraps each tool that can refuse and turns it, once, into a
    ``CallToolResult`` with ``isError: true`` (:func:`refused`): its text tells the agent what
    happened and what to call instead (``<message> Next: <next step>``), and its ``_meta`` under
    :data:`REFUSAL_META` carries the same facts as data (``refusal``, ``message``, ``next``, plus
    details such as candidates). A refusal carries no ``structuredContent``: that is for the tool's
    ``outputSchema``, which describes its successful result, and clients on the TypeScript SDK
    reject an error result whose structured content does not match it (MCP error -32602).

    Every answer is bounded in bytes (docs/tools.md, "Bounded answers"): :data:`MAX_ANSWER_BYTES`
    for the serialized result, text and structured content together, well below the 1 MiB event
    limit of common clients. The bound is kept where results are built, never by cutting JSON text:
    an inbox message is cut to :data:`MESSAGE_BYTES` with a note saying how to fetch it whole
    (:meth:`InboxMessage.of`), an inbox page to what fits (:func:`inbox_message_size`), and a
    channel or backlog page likewise (:func:`fitting`). :func:`ok` logs loudly if a result still
    exceeds the bound. ``inbox`` answers with one chat line per message as its text
    (:func:`inbox_answer`); the full detail is its structured content only.

    Other tool modules put their own result models beside their tools; the helpers here
    (:func:`refusal_boundary`, :func:`refused`, :func:`ok`) are for every tool.
    """

    @functools.wraps(tool)
    async def answering(*args: _P.args, **kwargs: _P.kwargs) -> CallToolResult:
        try:
            return await tool(*args, **kwargs)
        except Refusal as exc:
            return refused(exc)

    return answering


def ok(model: BaseModel) -> CallToolResult:
    """A successful result carrying ``model`` as structured content and as JSON text."""
    return bounded(
        CallToolResult(
            content=[TextContent(type="text", text=model.model_dump_json())],
            structured_content=model.model_dump(mode="json"),
        )
    )


def bounded(result: CallToolResult) -> CallToolResult:
    """``result``, logged as an error when it exceeds :data:`MAX_ANSWER_BYTES` (a tool whose
    pages are not bounded where they are built: a bug to fix there, never cut here)."""
    size = answer_bytes(result)
    if size > MAX_ANSWER_BYTES:
        log.error("answer_over_bound", bytes=size, bound=MAX_ANSWER_BYTES)
    return result
