"""The hooks a connector overrides: what to do when the host asks for something.

What this module knows: the signature and default of every host→server hook of
:class:`~switchboard.connector.Connector`. Each hook runs only after the SDK has checked the
grant, validated the params and (except for ``on_open``) found the channel among those the
host accepted, so a hook deals with the platform alone. The defaults are honest: a connector
that does not override ``on_publish`` refuses to publish (``-32017``) rather than claiming a
delivery, ``on_acknowledge`` answers ``acknowledged: false``, and the advisory stream hooks
never deliver anything (S-33; delivery happens only through ``channels/publish``).

What it deliberately does not know: the wire, the grant, or how hooks are dispatched (see
:mod:`.inbound`). Hooks run one at a time, in the order the host's messages arrived; long
platform work belongs in a task (:meth:`Connector.start_soon`), and anything that must
follow the answer in :meth:`Connector.after_reply`.
"""

from __future__ import annotations

from typing import Any

from switchboard.protocol import (
    AcknowledgeParams,
    AcknowledgeResult,
    ChannelDescriptor,
    ChannelNotPermitted,
    CloseParams,
    OpenParams,
    OpenResult,
    OutgoingChunkParams,
    OutgoingCompleteParams,
    PublishParams,
    TypingParams,
    UnknownChannel,
)
from switchboard.transport import ParamProblem, invalid_params

from .channels import ChannelTable
from .manifest import ServerManifest
from .policy import PolicyState

__all__ = ["ConnectorHooks"]


class ConnectorHooks:
    """Default implementations of every hook; :class:`Connector` inherits them.

    The attributes are the connection's state as a hook reads it (:class:`Connector` sets
    them); the inbound handlers read and call a connector through this class alone.
    """

    name: str
    version: str
    manifest: ServerManifest
    policy: PolicyState
    channels: ChannelTable
    initialized: bool
    host_info: dict[str, Any]
    host_advertisement: dict[str, Any] | None

    async def on_ready(self) -> None:
        """Called once per connection, in its own task, when the connection becomes ready."""

    async def on_publish(self, params: PublishParams) -> str:
        """Deliver a published message on the platform and return its message id.

        The channel is known and ``channels.publish`` granted when this runs. The default
        delivers nothing and refuses with ``-32017``.
        """
        raise ChannelNotPermitted(params.channel_id)

    async def on_open(self, params: OpenParams) -> ChannelDescriptor | OpenResult:
        """Open a channel; the default finds a registered one by ``channelId`` or address."""
        if params.channel_id is not None:
            found = self.channels.get(params.channel_id)
        elif params.type is not None and params.address is not None:
            found = self.channels.find(params.type, params.address)
        else:  # OpenParams guarantees one of the two forms
            found = None
        if found is None:
            raise UnknownChannel(params.channel_id or str(params.address))
        return found

    async def on_close(self, params: CloseParams) -> None:
        """Close a known channel on the platform side (default: nothing to do)."""

    async def on_typing(self, params: TypingParams) -> None:
        """Show (or stop) a typing indicator in a known channel (default: nothing)."""

    async def on_acknowledge(self, params: AcknowledgeParams) -> AcknowledgeResult | bool:
        """Acknowledge a message; the default says it cannot."""
        return AcknowledgeResult(acknowledged=False, reason="not supported by this connector")

    async def on_chunk(self, params: OutgoingChunkParams) -> None:
        """Advisory streamed text; never deliver it (S-33). Default: ignore."""

    async def on_complete(self, params: OutgoingCompleteParams) -> None:
        """End of an advisory stream; never deliver it (S-33). Default: ignore."""

    async def list_tools(self) -> list[dict[str, Any]]:
        """MCP tool definitions, when the connector was built with ``tools=True``."""
        return []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run an MCP tool and return its ``CallToolResult`` object."""
        raise invalid_params(ParamProblem("name", f"unknown tool {name!r}"))
