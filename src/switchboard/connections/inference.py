"""A connector's inference, answered by an agent's model: ``inference/request``, ``model/info``.

MCPL lets a connector ask its host for inference (§11) and for the model that serves it (§12).
Switchboard runs no model: the connector's *inference agent* (config ``inference_agent``, else
the agent that owns default delivery) answers, through the MCP sampling of a client it has
attached. :class:`InferenceServer` is the connection's side: checks, bounds (a timeout, a cap
on requests in flight), the MCPL answer and its chunk. :class:`InferenceAgents` is what the
agent side gives it; the mapping to MCP sampling is written in docs/inference.md.

What it deliberately does not know: MCP, sessions of agents, and the roster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from switchboard.config import ConnectorConfig
from switchboard.protocol import CapabilityDenied
from switchboard.refusals.errors import HostError
from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    Deferred,
    Peer,
    RpcError,
    TransportError,
    handled_request_id,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "INFERENCE_LEAVES",
    "FinishReason",
    "InferenceAgents",
    "InferenceAnswer",
    "InferenceAsk",
    "InferenceMessage",
    "InferenceServer",
    "InferenceUnavailable",
    "ModelSeen",
    "SamplingFailed",
    "finish_reason",
]

#: The leaves served through an agent's sampling: granted only when an agent could answer.
INFERENCE_LEAVES: Final = frozenset(
    {"inferenceRequest", "inferenceRequest.streaming", "modelInfo", "inferenceLifecycle"}
)

#: ``maxTokens`` asked of the sampling client when the connector gives none (MCP requires one).
DEFAULT_MAX_TOKENS: Final = 1024

FinishReason = Literal["end_turn", "max_tokens", "stop_sequence"]

_STOP_REASONS: Final[Mapping[str, FinishReason]] = {
    "endTurn": "end_turn",
    "maxTokens": "max_tokens",
    "stopSequence": "stop_sequence",
}


def finish_reason(stop_reason: str | None) -> FinishReason:
    """MCPL's ``finishReason`` for MCP's ``stopReason``; one MCPL has no word for (absent,
    ``toolUse``, a client's own) is ``end_turn``: the model stopped of its own accord."""
    return _STOP_REASONS.get(stop_reason or "", "end_turn")


@dataclass(frozen=True, slots=True)
class InferenceMessage:
    """One message of an ``inference/request``: ``user`` or ``assistant``, with MCPL content
    blocks (text, or image/audio carried as ``data``)."""

    role: Literal["user", "assistant"]
    content: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class InferenceAsk:
    """An ``inference/request`` as the answering agent's client is asked it.

    Attributes:
        server_id: the connector that asks.
        feature_set: the feature set it names.
        messages: the ``user`` and ``assistant`` messages, in order.
        system: the ``system`` messages' text joined by blank lines, or None.
        max_tokens: ``preferences.maxTokens``, else :data:`DEFAULT_MAX_TOKENS`.
        temperature: ``preferences.temperature``, or None.
        model_hint: ``preferences.model`` (advisory), or None.
    """

    server_id: str
    feature_set: str
    messages: tuple[InferenceMessage, ...]
    system: str | None
    max_tokens: int
    temperature: float | None = None
    model_hint: str | None = None


@dataclass(frozen=True, slots=True)
class InferenceAnswer:
    """What the sampling client answered: its text, its model, why it stopped (MCP words)."""

    text: str
    model: str
    stop_reason: str | None


@dataclass(frozen=True, slots=True)
class ModelSeen:
    """The model an agent's sampling client last reported, and which client it was."""

    model: str
    client: str


class InferenceUnavailable(HostError):
    """No attached session of the agent can sample; the message says who and what to do."""


class SamplingFailed(HostError):
    """The agent's client answered the sampling request with an error (or not at all)."""


class InferenceAgents(Protocol):
    """What the agent side gives a connection for its inference."""

    def answerer(self, config: ConnectorConfig) -> str | None:
        """The handle of the agent that answers ``config``'s connector, or None."""
        ...

    def why_not(self, config: ConnectorConfig) -> str | None:
        """Why no agent could ever answer ``config``'s connector now, or None when one could."""
        ...

    async def infer(self, agent: str, ask: InferenceAsk) -> InferenceAnswer:
        """Ask ``agent``'s sampling client; raises :class:`InferenceUnavailable` or
        :class:`SamplingFailed`."""
        ...

    def model_seen(self, agent: str) -> ModelSeen | None:
        """The model ``agent``'s sampling client last reported, or None."""
        ...


# -- the MCPL params -------------------------------------------------------------------------


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore")

    feature_set: str = Field(alias="featureSet", min_length=1)
    conversation_id: str | None = Field(default=None, alias="conversationId")
    stream: bool = False
    messages: list[_Message] = Field(min_length=1)
    preferences: dict[str, Any] = Field(default_factory=dict)


def _blocks(content: str | list[dict[str, Any]], where: str) -> tuple[Mapping[str, Any], ...]:
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    out: list[Mapping[str, Any]] = []
    for i, block in enumerate(content):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
        elif kind in ("image", "audio") and isinstance(block.get("data"), str):
            mime = block.get("mimeType")
            if not isinstance(mime, str):
                raise _invalid(f"{where}.content[{i}]: an {kind} needs its mimeType")
            out.append({"type": kind, "data": block["data"], "mimeType": mime})
        else:
            raise _invalid(
                f"{where}.content[{i}]: sampling carries text, and images and audio as data; "
                f"a {kind!r} block (or one given by uri) cannot be asked"
            )
    return tuple(out)


def _invalid(message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"invalid params: {message}")


def read_ask(server_id: str, params: Any) -> tuple[InferenceAsk, bool]:
    """The ask an ``inference/request``'s params make, and whether it wants a stream.

    Raises:
        RpcError: ``-32602`` for params that do not make one.
    """
    try:
        p = _Params.model_validate(params if isinstance(params, Mapping) else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "params"
        raise _invalid(f"{where}: {first['msg']}") from None
    system: list[str] = []
    messages: list[InferenceMessage] = []
    for i, m in enumerate(p.messages):
        blocks = _blocks(m.content, f"messages[{i}]")
        if m.role == "system":
            if any(b["type"] != "text" for b in blocks):
                raise _invalid(f"messages[{i}]: a system message is text only")
            system.append("".join(str(b["text"]) for b in blocks))
        else:
            messages.append(InferenceMessage(m.role, blocks))
    if not messages:
        raise _invalid("messages: at least one user or assistant message is needed")
    prefs = p.preferences
    max_tokens = prefs.get("maxTokens", DEFAULT_MAX_TOKENS)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _invalid("preferences.maxTokens: a positive integer")
    temperature = prefs.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float)
    ):
        raise _invalid("preferences.temperature: a number")
    hint = prefs.get("model")
    ask = InferenceAsk(
        server_id=server_id,
        feature_set=p.feature_set,
        messages=tuple(messages),
        system="\n\n".join(system) if system else None,
        max_tokens=max_tokens,
        temperature=None if temperature is None else float(temperature),
        model_hint=hint if isinstance(hint, str) and hint else None,
    )
    return ask, p.stream


def answer_wire(answer: InferenceAnswer) -> dict[str, Any]:
    """The MCPL result of ``answer``. MCP sampling reports no token usage: both counts are
    ``null`` (unknown), never a made-up zero."""
    return {
        "content": answer.text,
        "model": answer.model,
        "finishReason": finish_reason(answer.stop_reason),
        "usage": {"inputTokens": None, "outputTokens": None},
    }


def _error(reason: str, message: str, **data: Any) -> RpcError:
    return RpcError(INTERNAL_ERROR, message, {"reason": reason, **data})


class InferenceServer:
    """One connection's ``inference/request`` and ``model/info`` (docs/inference.md).

    What it knows:

    - **Checks, in order.** The params (``-32602``); the feature set (``-32003`` undeclared,
      ``-32001`` not enabled, ``-32002`` when its ``uses`` lacks ``inferenceRequest``); a stream
      needs ``inferenceRequest.streaming`` granted (``-32002``); an agent to answer; an id not
      already in flight on this connection (``-32600``: the chunks name the request by it); and
      at most ``max_inference_requests`` in flight (one more is refused at once,
      ``inference-busy``: never queued behind the agent's own work).
    - **The answer.** The agent's client is asked off the connection's reader (a ``Deferred``),
      within ``inference_timeout`` seconds (``inference-timeout``; the sampling request is
      cancelled). None attached that can sample is ``inference-unavailable``, the client's own
      error is ``sampling-failed``; each message names the agent and what to do.
    - **A stream.** MCP sampling does not stream, so a ``stream: true`` request gets one
      ``inference/chunk`` (``index`` 0, the whole text) right before its answer.
    - **``model/info``.** The model the agent's client last reported, or ``model-unknown``.

    Every error it answers with goes through ``refused`` (counted and logged by the session).
    """

    def __init__(
        self,
        config: ConnectorConfig,
        agents: InferenceAgents | None,
        *,
        check_feature_set: Callable[[str, str], None],
        allows: Callable[[str], bool],
        peer: Callable[[], Peer | None],
        refused: Callable[[str, Any, int | None, str, Any], None],
        answered: Callable[[str, str], None] | None = None,
    ) -> None:
        self._config = config
        self._agents = agents
        self._check_feature_set = check_feature_set
        self._allows = allows
        self._peer = peer
        self._refused = refused
        self._answered = answered
        self._in_flight: dict[str | int, None] = {}
        self.answered = 0
        """Requests answered with a result on this connection."""

    def why_not(self) -> str | None:
        """Why the inference leaves cannot be granted to this connection now, or None."""
        if self._agents is None:
            return "this Switchboard has no agents to answer a connector's inference"
        return self._agents.why_not(self._config)

    @property
    def in_flight(self) -> int:
        """Requests being answered now."""
        return len(self._in_flight)

    async def request(self, params: Any) -> Deferred:
        """``inference/request``: checked now, answered when the agent's client answers."""
        request_id = handled_request_id()
        ask, stream = read_ask(self._config.id, params)
        self._check_feature_set(ask.feature_set, "inferenceRequest")
        if stream and not self._allows("inferenceRequest.streaming"):
            raise CapabilityDenied("inferenceRequest.streaming")
        agent = self._agents.answerer(self._config) if self._agents is not None else None
        if agent is None or self._agents is None:
            raise _error(
                "inference-unavailable",
                f"no agent answers inference for connector {self._config.id!r}: {self.why_not()}",
            )
        if request_id is None:
            raise RpcError(INVALID_REQUEST, "an inference/request needs an id")
        if request_id in self._in_flight:
            raise RpcError(
                INVALID_REQUEST,
                "this request's id is already in flight on this connection: an "
                "inference/request's chunks name it, so each needs an id of its own",
                {"id": request_id},
            )
        cap = self._config.max_inference_requests
        if len(self._in_flight) >= cap:
            raise _error(
                "inference-busy",
                f"{cap} inference request(s) of connector {self._config.id!r} are already "
                f"being answered by {agent} (max_inference_requests); nothing was asked: "
                "send it again once one is answered",
                limit=cap,
            )
        self._in_flight[request_id] = None
        agents = self._agents
        return Deferred(lambda: self._answer(agents, agent, ask, stream, request_id, params))

    async def _answer(
        self,
        agents: InferenceAgents,
        agent: str,
        ask: InferenceAsk,
        stream: bool,
        request_id: str | int,
        params: Any,
    ) -> dict[str, Any]:
        timeout = self._config.inference_timeout
        try:
            try:
                with anyio.fail_after(timeout):
                    answer = await agents.infer(agent, ask)
            except TimeoutError:
                raise _error(
                    "inference-timeout",
                    f"{agent}'s client did not answer the sampling request within {timeout:g} s "
                    "(inference_timeout); it was cancelled",
                    agent=agent,
                ) from None
            except InferenceUnavailable as exc:
                raise _error("inference-unavailable", str(exc), agent=agent) from None
            except SamplingFailed as exc:
                raise _error("sampling-failed", str(exc), agent=agent) from None
            result = answer_wire(answer)
            if stream:
                peer = self._peer()
                # A link that is going takes neither the chunk nor the answer.
                if peer is not None:
                    with contextlib.suppress(TransportError):
                        await peer.notify(
                            "inference/chunk",
                            {"requestId": request_id, "index": 0, "delta": answer.text},
                        )
            self.answered += 1
            if self._answered is not None:
                self._answered(agent, answer.model)
            return result
        except RpcError as exc:
            self._refused("inference/request", params, exc.code, exc.message, exc.data)
            raise
        finally:
            self._in_flight.pop(request_id, None)

    async def model_info(self, params: Any) -> dict[str, Any]:
        """``model/info``: what the agent's sampling client last reported, or an error."""
        agents = self._agents
        agent = agents.answerer(self._config) if agents is not None else None
        if agents is None or agent is None:
            raise _error(
                "model-unknown",
                f"no agent answers for connector {self._config.id!r}, so no model is known: "
                f"{self.why_not()}",
            )
        seen = agents.model_seen(agent)
        if seen is None:
            raise _error(
                "model-unknown",
                f"no model is known yet: {agent}'s client has not answered a sampling request "
                "since Switchboard started; model/info tells the model the client reports "
                "with its first answer",
                agent=agent,
            )
        return {
            "id": seen.model,
            "vendor": "unknown",
            "contextWindow": 0,
            "capabilities": [],
        }
