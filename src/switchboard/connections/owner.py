"""The owner of a connector: the one interface through which anything is asked of a connector.

Agents and the lifecycle never hold a connection: they ask the connector's owner. The owner
says how the connection stands (its :class:`SessionState`, grant and settings) and carries
every request an agent or the lifecycle makes of the connector: a publish, a channel open or
close, an acknowledgement, typing, streamed speech, a tool call, the ``beforeInference``
context hook, a turn's ``inference/lifecycle``. Today the owner of every connector is its local
:class:`~switchboard.connections.session.ConnectorSession`, which implements
:class:`ConnectorOwner` and sends each request on its own link. With several instances, the
owner of a connector may run on another machine: its :class:`ConnectorOwner` is then a proxy
that carries the same requests there (docs/architecture.md, "Seams").

A request to an owner that is not connected raises ``LinkClosedError`` and sends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Protocol

from structlog.typing import FilteringBoundLogger

from switchboard.config import ConnectorConfig
from switchboard.connections.connector_tools import ConnectorTool
from switchboard.connections.diagnostics import DisabledFeatureSet
from switchboard.protocol import Grant
from switchboard.refusals.outcome import PublishOutcome
from switchboard.runtime.ratelog import RateLimitedLog

__all__ = ["ANSWER_WAIT", "ConnectorOwner", "OwnedTools", "Owners", "SessionState", "ready_for"]

#: Seconds the host waits for an answer to leave before running what waits for it (the
#: collector after a large ``channels/register``, the admission of its channels) anyway:
#: a connector that stops reading its stdin holds up nothing for longer.
ANSWER_WAIT = 5.0


class SessionState(StrEnum):
    """How a connector's connection stands."""

    CONNECTING = "connecting"
    READY = "ready"
    MCP_ONLY = "mcp-only"
    CLOSED = "closed"


class OwnedTools(Protocol):
    """A connector's own MCP tools, as its owner holds them."""

    @property
    def granted(self) -> bool:
        """Whether the connector is ready and its grant passes its tools through."""
        ...

    @property
    def tools(self) -> tuple[ConnectorTool, ...]:
        """The tools, in the connector's order (empty when not granted)."""
        ...

    def find(self, name: str) -> ConnectorTool | None:
        """The tool ``name``, if the connector lists it now."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Call the tool; the connector's result as it came (raises what the request raised)."""
        ...


class ConnectorOwner(Protocol):
    """Whoever runs one connector's session (see the module docstring)."""

    @property
    def server_id(self) -> str: ...

    @property
    def state(self) -> SessionState: ...

    @property
    def config(self) -> ConnectorConfig: ...

    @property
    def grant(self) -> Grant:
        """The grant in force (empty until the policy exchange completes)."""
        ...

    @property
    def disabled_feature_sets(self) -> tuple[DisabledFeatureSet, ...]: ...

    @property
    def connected(self) -> bool:
        """Whether the connector's link is up (a request can be sent)."""
        ...

    @property
    def log(self) -> FilteringBoundLogger:
        """The connector's logger (lines carry its ``server_id``)."""
        ...

    @property
    def noted(self) -> RateLimitedLog:
        """The connector's rate-limited log: what it may cause again and again, counted."""
        ...

    @property
    def tools(self) -> OwnedTools: ...

    async def publish(
        self, channel_id: str, content: list[dict[str, Any]], conversation_id: str
    ) -> PublishOutcome:
        """``channels/publish``: ``delivered``, ``failed`` or ``unknown``, never raises."""
        ...

    async def open_channel(self, params: Mapping[str, Any]) -> Any:
        """``channels/open``; the connector's result."""
        ...

    async def close_channel(self, channel_id: str) -> Any:
        """``channels/close``; the connector's result."""
        ...

    async def acknowledge(self, params: Mapping[str, Any]) -> Any:
        """``channels/acknowledge``; the connector's result."""
        ...

    async def typing(self, params: Mapping[str, Any]) -> None:
        """``channels/typing`` (a notification)."""
        ...

    async def stream(self, method: str, params: Mapping[str, Any]) -> None:
        """One message of streamed speech (a notification)."""
        ...

    async def before_inference(self, params: Mapping[str, Any], answer_within: float) -> Any:
        """``context/beforeInference``, answered within ``answer_within`` seconds."""
        ...

    async def inference_phase(self, params: Mapping[str, Any]) -> None:
        """``inference/lifecycle`` (a notification)."""
        ...

    def apply_declaration(self, declared: Any) -> bool:
        """Take a channel the connector declared in an open's answer, as an update of its
        registration (validated and authorized as ``channels/changed`` is)."""
        ...

    async def output_written(self) -> None:
        """Return once what was sent to the connector so far has left."""
        ...


Owners = Mapping[str, ConnectorOwner]
"""The owner of each connector that has one now, by server id."""


def ready_for(owner: ConnectorOwner | None, capability: str) -> bool:
    """Whether ``owner`` is ready, connected and granted ``capability`` now."""
    return (
        owner is not None
        and owner.state is SessionState.READY
        and owner.connected
        and owner.grant.allows(capability)
    )
