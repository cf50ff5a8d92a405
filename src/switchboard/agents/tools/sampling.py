"""The agent's client as a connector's model: MCP ``sampling/createMessage`` for MCPL inference.

At each ``initialize`` the session is offered to the port, as a :class:`McpSampler` when the
client declared the ``sampling`` capability. A connector's ``inference/request`` becomes one
``sampling/createMessage`` on that session (docs/inference.md has the mapping).

What it deliberately does not know: which agent answers which connector, the bounds of a
request (the connection's), and MCPL's wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.types import (
    CONNECTION_CLOSED,
    AudioContent,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
)
from pydantic import ValidationError

from switchboard.agents.port.protocol import (
    AgentPort,
    InferenceAnswer,
    InferenceAsk,
    SamplerGone,
    SamplingFailed,
)

__all__ = ["McpSampler", "SamplingOffer", "sampling_params"]

_Block = TextContent | ImageContent | AudioContent


def _block(block: Mapping[str, Any]) -> _Block:
    if block["type"] == "text":
        return TextContent(type="text", text=str(block["text"]))
    if block["type"] == "image":
        return ImageContent(type="image", data=str(block["data"]), mime_type=str(block["mimeType"]))
    return AudioContent(type="audio", data=str(block["data"]), mime_type=str(block["mimeType"]))


def sampling_params(ask: InferenceAsk) -> CreateMessageRequestParams:
    """The ``sampling/createMessage`` params that ask what ``ask`` asks (docs/inference.md)."""
    messages = []
    for m in ask.messages:
        blocks = [_block(b) for b in m.content]
        messages.append(
            SamplingMessage(role=m.role, content=blocks[0] if len(blocks) == 1 else list(blocks))
        )
    hints = ModelPreferences(hints=[ModelHint(name=ask.model_hint)]) if ask.model_hint else None
    return CreateMessageRequestParams(
        messages=messages,
        system_prompt=ask.system,
        max_tokens=ask.max_tokens,
        temperature=ask.temperature,
        model_preferences=hints,
        include_context="none",
    )


class McpSampler:
    """One session whose client declared sampling (a
    :class:`~switchboard.agents.port.protocol.Sampler`)."""

    __slots__ = ("_session", "client")

    def __init__(self, session: ServerSession, client: str) -> None:
        self._session = session
        self.client = client

    async def sample(self, ask: InferenceAsk) -> InferenceAnswer:
        request = CreateMessageRequest(params=sampling_params(ask))
        try:
            result = await self._session.send_request(request, CreateMessageResult)
        except NoBackChannelError as exc:
            raise SamplerGone(str(exc)) from None
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:  # the session ended: ask the next one
                raise SamplerGone(f"{self.client}'s connection ended") from None
            raise SamplingFailed(
                f"{self.client} refused the sampling request: {exc.error.message} "
                f"(code {exc.error.code})"
            ) from None
        except ValidationError as exc:
            raise SamplingFailed(
                f"{self.client} answered the sampling request with something that is not a "
                f"CreateMessageResult ({exc.error_count()} problem(s))"
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            raise SamplerGone(f"{self.client}'s connection ended") from None
        content = result.content
        if not isinstance(content, TextContent):
            raise SamplingFailed(
                f"{self.client} answered with {content.type} content; an inference/request is "
                "answered with text"
            )
        return InferenceAnswer(content.text, result.model, result.stop_reason)


def _client_name(params: Mapping[str, Any]) -> str:
    info = params.get("clientInfo")
    if not isinstance(info, Mapping):
        return "an MCP client"
    return f"{info.get('name', 'an MCP client')} {info.get('version', '')}".strip()


def _can_sample(params: Mapping[str, Any]) -> bool:
    capabilities = params.get("capabilities")
    return isinstance(capabilities, Mapping) and isinstance(capabilities.get("sampling"), Mapping)


def _connection_of(session: ServerSession) -> object:
    """What identifies the connection of ``session`` (a session is made per request)."""
    return getattr(session, "_connection", session)


class SamplingOffer:
    """Offers each of the agent's sessions to the port at its ``initialize``
    (:meth:`middleware` goes to the ``MCPServer``)."""

    def __init__(self, port: AgentPort) -> None:
        self._port = port

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        result: HandlerResult = await call_next(ctx)
        if ctx.method == "initialize":
            # The connection takes the client's params only after the middleware: read them
            # from the request.
            params = ctx.params if isinstance(ctx.params, Mapping) else {}
            client = _client_name(params)
            sampler = McpSampler(ctx.session, client) if _can_sample(params) else None
            self._port.offer_sampling(_connection_of(ctx.session), sampler, client)
        return result
