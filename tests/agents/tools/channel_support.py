"""Shared pieces of the channel-tool tests: descriptors, messages and calling a tool."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from switchboard.agents.tools.results import REFUSAL_META
from tests.fake import FakeConnector, descriptor, message


def dm(cid: str, name: str, recipient_id: str, *, label: str | None = None) -> dict[str, Any]:
    """A DM channel descriptor for the person ``name`` (platform user id ``recipient_id``)."""
    return descriptor(
        cid,
        label=label if label is not None else f"DM: {name}",
        metadata={"channelType": "dm", "recipientName": name, "recipientId": recipient_id},
    )


def tagged(cid: str, mid: str, *tags: str, **extra: Any) -> dict[str, Any]:
    """A ``channels/incoming`` message with event ``tags`` (and extra fields)."""
    return {**message(cid, mid), "tags": list(tags), **extra}


def answer(result: CallToolResult) -> dict[str, Any]:
    """What a tool result says, as data: a success's structured content, or a refusal's facts.

    A refusal is first checked for the shape every client reads (docs/tools.md,
    "Refusals"): no structured content, its facts (``refusal``, ``message``, ``next`` and the
    data) under ``_meta[REFUSAL_META]``, and text that says what happened and what to do next.
    An error that is not a refusal (arguments the input schema rejects) says nothing as data.
    """
    if not result.is_error:
        return dict(result.structured_content or {})
    assert result.structured_content is None, "an error result must carry no structured content"
    facts = dict((result.meta or {}).get(REFUSAL_META) or {})
    if facts:
        texts = [block.text for block in result.content if block.type == "text"]
        assert texts == [f"{facts['message']} Next: {facts['next']}"], texts
    return facts


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call ``tool`` and return what it says as data (:func:`answer`), with ``is_error`` added."""
    result = await client.call_tool(tool, args or {})
    data = answer(result)
    data["is_error"] = bool(result.is_error)
    return data


async def _open(method: str, params: Any) -> Any:
    cid = params.get("channelId") if isinstance(params, dict) else None
    return {"channel": {"id": cid, "type": "test", "label": f"#{cid}"}}


async def _close(method: str, params: Any) -> Any:
    return {"closed": True}


def lifecycle_fake() -> FakeConnector:
    """A fake connector that also answers ``channels/open`` and ``channels/close``, so the
    host may open a closed channel before speech goes into it."""
    fake = FakeConnector()
    fake.extra["channels/open"] = _open
    fake.extra["channels/close"] = _close
    return fake
