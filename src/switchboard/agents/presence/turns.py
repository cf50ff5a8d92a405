"""``inference/lifecycle``: the agents' turns, told to the connectors that may hear of them.

An agent's turn, as Switchboard can see it (docs/inference.md, "Turns as lifecycle"), begins
when an ``inbox`` read returns messages (``started``) and ends at the agent's next ``inbox``
call (``completed``), when its last session detaches or the host stops (``aborted``), or when
beginning it failed (``failed``). Each ``started`` gets exactly one terminal, sent to the same
connections that heard it, while they still stand and may hear it.

What it deliberately does not know: MCP, when a read happens (the port says), and the hooks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import structlog

from switchboard.agents.roster.attach import Attachments
from switchboard.connections.inference import ModelSeen
from switchboard.connections.owner import ConnectorOwner, Owners, ready_for
from switchboard.transport import TransportError

__all__ = ["LIFECYCLE", "MODEL_INFO", "OpenTurn", "Terminal", "TurnSignals"]

log = structlog.get_logger(__name__)

LIFECYCLE = "inferenceLifecycle"
MODEL_INFO = "modelInfo"

Terminal = Literal["completed", "aborted", "failed"]


@dataclass(slots=True)
class OpenTurn:
    """A turn whose ``started`` was sent, and to whom."""

    inference_id: str
    conversation_id: str
    turn_index: int
    told: list[ConnectorOwner]


class TurnSignals:
    """Sends ``inference/lifecycle`` for agents' turns (see the module docstring).

    What it knows:

    - **Who hears.** Every connector ready, connected and granted ``inferenceLifecycle`` when the
      turn starts (H-33). The terminal goes to those same connections only (a connector that
      reconnected meanwhile never heard the ``started``), and only while they are still
      connected and granted; a connection that ended or lost the grant can be told nothing.
    - **What it says.** Metadata only (H-30): ``inferenceId`` (shared with the turn's
      ``context/beforeInference``), ``conversationId`` (the agent's), ``turnIndex`` (0-based),
      ``phase``; ``model`` only to a connector granted ``modelInfo`` and only when the agent's
      sampling client has reported one (H-31). ``usage`` is never sent: MCP does not report it.
    - **Exactly one terminal** per ``started`` (H-32): the open turn is taken out before its
      terminal is sent, so no path sends two.

    Args:
        owners: The owner of each connector.
        model: The model an agent's client last reported (by agent name), or None.
        attachments: The agents' sessions: the turn of an agent whose last session detaches
            is aborted.
    """

    def __init__(
        self,
        owners: Owners,
        model: Callable[[str], ModelSeen | None] | None = None,
        attachments: Attachments | None = None,
    ) -> None:
        self._owners = owners
        self._model = model
        self._open: dict[str, OpenTurn] = {}
        self._send, self._queued = anyio.create_memory_object_stream[tuple[str, Terminal]](1000)
        if attachments is not None:
            attachments.watch_gone(self._detached)

    def open_turn(self, agent: str) -> OpenTurn | None:
        """The turn of ``agent`` whose terminal is owed, if any."""
        return self._open.get(agent)

    async def start(self, agent: str, conversation_id: str, turn_index: int) -> str:
        """Tell the turn's ``started``; return its ``inferenceId`` (ending one still open)."""
        await self.end(agent, "completed")
        inference_id = uuid.uuid4().hex
        told = [o for o in self._owners.values() if ready_for(o, LIFECYCLE)]
        turn = OpenTurn(inference_id, conversation_id, turn_index, told)
        self._open[agent] = turn
        for owner in told:
            await self._tell(owner, agent, turn, "started")
        return inference_id

    async def end(self, agent: str, phase: Terminal) -> None:
        """Tell the terminal of ``agent``'s open turn, if one is open."""
        turn = self._open.pop(agent, None)
        if turn is None:
            return
        for owner in turn.told:
            if self._owners.get(owner.server_id) is owner and ready_for(owner, LIFECYCLE):
                await self._tell(owner, agent, turn, phase)

    def end_soon(self, agent: str, phase: Terminal) -> None:
        """:meth:`end` from a caller that cannot wait (an agent's last session detached)."""
        if agent in self._open:
            try:
                self._send.send_nowait((agent, phase))
            except anyio.WouldBlock:
                log.warning("lifecycle_terminal_not_queued", agent=agent, phase=phase)

    def _detached(self, agent: str) -> None:
        self.end_soon(agent, "aborted")

    async def end_all(self, phase: Terminal) -> None:
        """Tell every open turn's terminal (the host is stopping)."""
        for agent in list(self._open):
            await self.end(agent, phase)

    async def run(self) -> None:
        """Send the terminals :meth:`end_soon` queued, until cancelled."""
        async for agent, phase in self._queued:
            await self.end(agent, phase)

    async def _tell(self, owner: ConnectorOwner, agent: str, turn: OpenTurn, phase: str) -> None:
        params: dict[str, Any] = {
            "inferenceId": turn.inference_id,
            "conversationId": turn.conversation_id,
            "turnIndex": turn.turn_index,
            "phase": phase,
        }
        seen = self._model(agent) if self._model is not None else None
        if seen is not None and owner.grant.allows(MODEL_INFO):
            params["model"] = {
                "id": seen.model,
                "vendor": "unknown",
                "contextWindow": 0,
                "capabilities": [],
            }
        try:
            await owner.inference_phase(params)
        except TransportError as exc:
            owner.noted.note(
                ("inference_lifecycle_not_sent",),
                "inference_lifecycle_not_sent",
                level="info",
                phase=phase,
                error=str(exc),
            )
