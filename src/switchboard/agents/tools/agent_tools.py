"""The tools between agents: agent_send, directory_list, directory_search, directory_lookup
and set_busy (docs/tools.md).

Each is a plain function of the agent's :class:`~switchboard.agents.port.AgentPort`;
``agent_send`` deposits mail into the recipient's inbox, the directory tools read the
directory, and ``set_busy`` marks the agent's own entry.

What it deliberately does not know: how mail is stored or routed, and the directory's SQL.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from switchboard.agents.port.protocol import AgentPort, DirectoryPage
from switchboard.agents.tools.results import ok, refusal_boundary
from switchboard.agents.tools.toolset import READ_ONLY, ToolSet, writes

__all__ = [
    "TOOLS",
    "DirectoryPageResult",
    "EntryResult",
    "SentResult",
    "agent_send",
    "directory_list",
    "directory_lookup",
    "directory_search",
    "set_busy",
    "shared",
]

TOOLS = ToolSet()


def shared(port: AgentPort) -> bool:
    """Listed only where agents share the Switchboard (docs/agents.md, "Tools")."""
    return port.many_agents


"""The mail and directory tools, in the order ``tools/list`` shows them."""


class SentResult(BaseModel):
    delivered: bool = Field(description="In the recipient's inbox, durably.")
    to: str = Field(description="The recipient's handle.")
    address: str = Field(description="The address it was sent to.")
    n: int = Field(description="Its number from you to this recipient (1, 2, ... no gaps).")
    seq: int


class DirectoryPageResult(BaseModel):
    entries: list[dict[str, Any]]
    total: int = Field(description="How many match in all.")
    limit: int
    offset: int


class EntryResult(BaseModel):
    entry: dict[str, Any]


def _page(page: DirectoryPage) -> CallToolResult:
    return ok(
        DirectoryPageResult(
            entries=[e.to_public() for e in page.entries],
            total=page.total,
            limit=page.limit,
            offset=page.offset,
        )
    )


@TOOLS.tool(
    description="Send mail to an @agent or a service address; it lands in their inbox.",
    annotations=writes(world=False, idempotent=False),
    when=shared,
)
@refusal_boundary
async def agent_send(port: AgentPort, to: str, text: str) -> Annotated[CallToolResult, SentResult]:
    sent = await port.send_mail(to, text)
    return ok(
        SentResult(
            delivered=True, to=f"@{sent.recipient}", address=sent.address, n=sent.n, seq=sent.seq
        )
    )


# Filters take "" for "any" and pages are checked by the directory (a directory-refused
# refusal): plain strings and integers keep the model-facing schemas small.


@TOOLS.tool(description="List directory entries, filtered.", annotations=READ_ONLY, when=shared)
@refusal_boundary
async def directory_list(
    port: AgentPort,
    prefix: str = "",
    tag: str = "",
    kind: Literal["agent", "service", ""] = "",
    owner: str = "",
    limit: int = 50,
    offset: int = 0,
) -> Annotated[CallToolResult, DirectoryPageResult]:
    return _page(
        port.directory_list(
            prefix=prefix or None,
            tag=tag or None,
            kind=kind or None,
            owner=owner or None,
            limit=limit,
            offset=offset,
        )
    )


@TOOLS.tool(description="Search directory entries by text.", annotations=READ_ONLY, when=shared)
@refusal_boundary
async def directory_search(
    port: AgentPort, text: str, limit: int = 50, offset: int = 0
) -> Annotated[CallToolResult, DirectoryPageResult]:
    return _page(port.directory_search(text, limit=limit, offset=offset))


@TOOLS.tool(description="One directory entry by address.", annotations=READ_ONLY, when=shared)
@refusal_boundary
async def directory_lookup(port: AgentPort, address: str) -> Annotated[CallToolResult, EntryResult]:
    return ok(EntryResult(entry=port.directory_lookup(address).to_public()))


@TOOLS.tool(
    description="Mark your directory entry busy or idle.",
    annotations=writes(world=False, idempotent=True),
    when=shared,
)
@refusal_boundary
async def set_busy(port: AgentPort, busy: bool) -> Annotated[CallToolResult, EntryResult]:
    return ok(EntryResult(entry=port.set_busy(busy).to_public()))
