"""The tune-out tools: tune_out, tune_out_status and tune_out_backlog (channel-registry.md §6).

Each tool is a plain function of the agent's :class:`~switchboard.agents.port.AgentPort`: start
or cancel a tune-out of one channel (or of every channel but one), list the agent's, and page
through what one withheld. The lifecycle verbs refuse a tuned-out channel themselves.

What it deliberately does not know: how tune-outs withhold, wake and end.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import (
    DEFAULT_BACKLOG_CAP,
    ActiveTuneOut,
    AgentPort,
    ScopeKind,
    TuneOutTerms,
)
from switchboard.agents.tools.results import (
    MAX_ANSWER_BYTES,
    InboxMessage,
    fitting,
    ok,
    refusal_boundary,
)
from switchboard.agents.tools.toolset import READ_ONLY, ToolSet, writes

__all__ = [
    "TOOLS",
    "TuneOutBacklogResult",
    "TuneOutInfo",
    "TuneOutResult",
    "TuneOutStatusResult",
    "tune_out",
    "tune_out_backlog",
    "tune_out_status",
]

TOOLS = ToolSet()
"""The tune-out tools, in the order ``tools/list`` shows them."""

Scope = Literal["channel", "all-except"]


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


class TuneOutInfo(BaseModel):
    epoch_id: str = Field(description="This tune-out's id.")
    owner: str = Field(description="The agent whose attention it governs.")
    reader: str | None = Field(description="The agent that may read what it withholds.")
    scope: Scope = Field(description="channel, or all-except (every channel but `channel`).")
    channel: str = Field(description="The channel tuned out, or the one kept (all-except).")
    server_id: str
    channel_id: str
    started_at: str
    expires_at: str | None = Field(description="When it ends by itself; null: until cancelled.")
    wake_budget: int | None = Field(description="Wakes allowed; the next one ends it.")
    wakes: int = Field(description="Wakes so far: reads that withheld a message addressing you.")
    backlog_cap: int = Field(description="The most withheld messages handed over raw at the end.")

    @classmethod
    def of(cls, held: ActiveTuneOut, port: AgentPort) -> TuneOutInfo:
        epoch = held.epoch
        ref = epoch.scope.ref
        return cls(
            epoch_id=epoch.epoch_id,
            owner=epoch.owner,
            reader=epoch.reader,
            scope="channel" if epoch.scope.kind is ScopeKind.CHANNEL else "all-except",
            channel=port.name_shown(ref, in_turn=False),
            server_id=ref.server_id,
            channel_id=ref.channel_id,
            started_at=_iso(epoch.started_at) or "",
            expires_at=_iso(epoch.expires_at),
            wake_budget=epoch.max_wakes,
            wakes=held.wake_count,
            backlog_cap=epoch.backlog_cap,
        )


class TuneOutResult(BaseModel):
    status: Literal["started", "cancelled"]
    tune_out: TuneOutInfo
    replaced: str | None = Field(
        default=None, description="The id of your earlier tune-out this one replaced."
    )
    note: str


class TuneOutStatusResult(BaseModel):
    tune_outs: list[TuneOutInfo] = Field(description="The tune-outs you own or read.")


class TuneOutBacklogResult(BaseModel):
    tune_out: TuneOutInfo
    messages: list[InboxMessage] = Field(description="Withheld messages, oldest first.")
    cursor: int = Field(description="Pass as after_seq to read on.")
    more: bool


@TOOLS.tool(
    description="Stop attending to a channel without closing it: its messages wait in a "
    "backlog, which comes first in your inbox when the tune-out ends (mode cancel, "
    "duration_minutes, or a message addressing you past wake_budget). scope all-except: "
    "every channel but `channel`. mode cancel also ends one you read (digest: a summary).",
    annotations=writes(world=True, idempotent=False),
)
@refusal_boundary
async def tune_out(
    port: AgentPort,
    channel: Annotated[
        str,
        Field(
            min_length=1,
            description="As channel_list names it (all-except: the one to keep).",
        ),
    ],
    mode: Annotated[Literal["start", "cancel"], Field(description="start or cancel")] = "start",
    scope: Annotated[Scope, Field(description="channel or all-except")] = "channel",
    duration_minutes: Annotated[
        float | None, Field(gt=0, description="Ends by itself after this long.")
    ] = None,
    wake_budget: Annotated[
        int | None,
        Field(
            ge=0,
            description="Inbox reads withholding a message addressing you that it lets "
            "pass; the next one ends it.",
        ),
    ] = None,
    reader: Annotated[
        str | None, Field(min_length=1, description="An agent that may read the backlog.")
    ] = None,
    backlog_cap: Annotated[
        int | None, Field(ge=0, le=500, description="Most messages handed over raw.")
    ] = None,
    digest: Annotated[
        str | None,
        Field(description="cancel only: what was withheld, for the owner."),
    ] = None,
) -> Annotated[CallToolResult, TuneOutResult]:
    if mode == "cancel":
        cancelled = await port.cancel_tune_out(channel, ScopeKind(scope), digest)
        held = cancelled.held
        whose = "your" if held.epoch.owner == port.agent else f"{held.epoch.owner}'s"
        return ok(
            TuneOutResult(
                status="cancelled",
                tune_out=TuneOutInfo.of(held, port),
                note=f"Cancelled; {whose} withheld messages come first in "
                f"{whose} next inbox read (withheld range ends at seq {cancelled.end_seq}).",
            )
        )
    terms = TuneOutTerms(
        reader=reader,
        backlog_cap=DEFAULT_BACKLOG_CAP if backlog_cap is None else backlog_cap,
        max_wakes=wake_budget,
        duration=None if duration_minutes is None else duration_minutes * 60.0,
    )
    started = await port.start_tune_out(channel, ScopeKind(scope), terms)
    info = TuneOutInfo.of(started.held, port)
    end = "when cancelled" if info.expires_at is None else f"at {info.expires_at}"
    return ok(
        TuneOutResult(
            status="started",
            tune_out=info,
            replaced=None if started.replaced is None else started.replaced.epoch_id,
            note=f"Tuned out; it ends {end}, or at the first message addressing you past "
            "its wake budget. Its messages wait in a backlog meanwhile.",
        )
    )


@TOOLS.tool(description="List the tune-outs you own or read.", annotations=READ_ONLY)
async def tune_out_status(port: AgentPort) -> TuneOutStatusResult:
    return TuneOutStatusResult(tune_outs=[TuneOutInfo.of(h, port) for h in port.tune_outs()])


@TOOLS.tool(
    description="Read what a tune-out you read (or own) has withheld so far, oldest first. "
    "Pass the returned cursor as after_seq to read on.",
    annotations=READ_ONLY,
)
@refusal_boundary
async def tune_out_backlog(
    port: AgentPort,
    channel: Annotated[str, Field(min_length=1, description="As given to tune_out.")],
    scope: Annotated[Scope, Field(description="channel or all-except")] = "channel",
    after_seq: Annotated[int, Field(ge=0, description="Read past this seq.")] = 0,
    limit: Annotated[int, Field(ge=1, le=500, description="At most this many.")] = 50,
) -> Annotated[CallToolResult, TuneOutBacklogResult]:
    page = await port.tune_out_backlog(channel, ScopeKind(scope), after_seq=after_seq, limit=limit)
    messages = [InboxMessage.of(m) for m in page.messages]
    kept = fitting(messages, MAX_ANSWER_BYTES - 16 * 1024)  # bounded answers: docs/tools.md
    cut = kept < len(messages)
    return ok(
        TuneOutBacklogResult(
            tune_out=TuneOutInfo.of(page.held, port),
            messages=messages[:kept],
            cursor=messages[kept - 1].seq if cut else page.cursor,
            more=page.more or cut,
        )
    )
