"""Which attached sessions can sample, and who answers a connector's inference: :class:`Samplers`.

A transport offers each agent session at its ``initialize``, with a :class:`Sampler` when its
client declared MCP's ``sampling`` capability; a connector's ``inference/request`` is asked of
the newest such session of the connector's inference agent (docs/inference.md). It is the agent
side's :class:`~switchboard.connections.inference.InferenceAgents`.

What it deliberately does not know: MCP (a :class:`Sampler` is made by the tools), the wire of
MCPL, and the bounds a connection puts on its requests.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Protocol

import structlog

from switchboard.agents.roster.attach import Attachments
from switchboard.agents.roster.roster import Roster
from switchboard.config import ConnectorConfig
from switchboard.connections.inference import (
    InferenceAnswer,
    InferenceAsk,
    InferenceUnavailable,
    ModelSeen,
)
from switchboard.refusals.errors import HostError

__all__ = ["ATTACH_HINT", "MAX_SESSIONS", "Sampler", "SamplerGone", "Samplers"]

log = structlog.get_logger(__name__)

#: Sessions remembered per agent (the oldest are forgotten first).
MAX_SESSIONS: Final = 64

#: How an agent's client comes to answer inference, said in every "cannot answer" message.
ATTACH_HINT: Final = (
    "attach an MCP client that declares the sampling capability (sampling/createMessage) "
    "as {agent}: over stdio (`switchboard run`, the agent the client speaks for) or to the "
    "agents' HTTP endpoint with {agent}'s token, using the 2025-11-25 handshake (the "
    "2026-07-28 protocol has no sampling)"
)


class SamplerGone(HostError):
    """The session's connection ended: it can sample no more."""


class Sampler(Protocol):
    """One attached session whose client declared sampling (the agent tools make it)."""

    @property
    def client(self) -> str:
        """The client's name and version, as its ``initialize`` gave them."""
        ...

    async def sample(self, ask: InferenceAsk) -> InferenceAnswer:
        """Ask the client's model. Raises :class:`SamplerGone` when the connection ended, or
        :class:`~switchboard.connections.inference.SamplingFailed` with the client's error."""
        ...


class Samplers:
    """Each agent's sessions that can sample, and the model they last reported.

    What it knows (docs/inference.md):

    - **Who answers.** A connector's ``inference_agent``, else the agent that owns default
      delivery (:meth:`answerer`). :meth:`why_not` says why no agent could, which leaves the
      inference leaves out of that connector's grant.
    - **Which session.** Each session is offered at its ``initialize``; one whose client did not
      declare sampling is remembered only to say so. A request goes to the newest session that can
      sample; one whose connection ended (:class:`SamplerGone`) is forgotten and the next newest is
      asked. When none is left, the message says whether the agent has no session attached (the
      host's attachments) or none whose client declared sampling.
    - **The model.** :meth:`model_seen` is the model the client of the agent's last answered
      sampling request reported.
    """

    __slots__ = ("_attachments", "_by_agent", "_plain", "_roster", "_seen")

    def __init__(self, roster: Roster, attachments: Attachments) -> None:
        self._roster = roster
        self._attachments = attachments
        self._by_agent: dict[str, dict[Hashable, Sampler]] = {}
        self._plain: dict[str, str] = {}
        self._seen: dict[str, ModelSeen] = {}

    # -- offered by the transports ------------------------------------------------------------

    def offer(self, agent: str, key: Hashable, sampler: Sampler | None, client: str) -> None:
        """Session ``key`` of ``agent`` began; ``sampler`` when its client can sample."""
        name = _key(agent)
        if sampler is None:
            self._plain[name] = client
            log.info(
                "agent_client_cannot_sample",
                agent=f"@{name}",
                client=client,
                effect="its connectors' inference/request is not answered through this session",
            )
            return
        sessions = self._by_agent.setdefault(name, {})
        sessions.pop(key, None)
        sessions[key] = sampler
        while len(sessions) > MAX_SESSIONS:
            del sessions[next(iter(sessions))]

    # -- InferenceAgents ----------------------------------------------------------------------

    def answerer(self, config: ConnectorConfig) -> str | None:
        if config.inference_agent is not None:
            return config.inference_agent
        default = self._roster.default
        return default.handle if default is not None else None

    def why_not(self, config: ConnectorConfig) -> str | None:
        agent = self.answerer(config)
        if agent is None:
            return (
                "no agent owns default delivery and the connector names no inference_agent; "
                'set inference_agent = "@handle" in its [[connectors]] table'
            )
        if self._roster.get(agent) is None:
            return f"its inference_agent {agent} is not an agent of this Switchboard now"
        return None

    async def infer(self, agent: str, ask: InferenceAsk) -> InferenceAnswer:
        name = _key(agent)
        sessions = self._by_agent.get(name, {})
        while sessions:
            key, sampler = next(reversed(sessions.items()))
            try:
                answer = await sampler.sample(ask)
            except SamplerGone:
                sessions.pop(key, None)
                continue
            self._seen[name] = ModelSeen(answer.model, sampler.client)
            return answer
        raise InferenceUnavailable(self._unavailable(name))

    def model_seen(self, agent: str) -> ModelSeen | None:
        return self._seen.get(_key(agent))

    def _unavailable(self, name: str) -> str:
        handle = f"@{name}"
        hint = ATTACH_HINT.format(agent=handle)
        if not self._attachments.count(name) and name not in self._plain:
            return (
                f"{handle} answers this connector's inference but has no session attached: {hint}"
            )
        plain = self._plain.get(name)
        client = f" ({plain})" if plain else ""
        return (
            f"{handle} answers this connector's inference, but no attached session's "
            f"client{client} declared the sampling capability: {hint}"
        )


def _key(name: str) -> str:
    return name[1:] if name.startswith("@") else name
