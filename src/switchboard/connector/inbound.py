"""What a connector answers: the host→server methods of MCPL 0.5 and the MCP basics.

:class:`InboundHandlers` answers ``initialize``, ``ping``, the policy exchange, the manifest and
every channel method (mcpl-protocol.md 2, 4.5-4.10): each checked against the grant and its
params validated before the hook runs, each request answered (``-32601`` for unknown methods).
It reaches the connector only through :class:`~.hooks.ConnectorHooks` and its reply hooks.

What it deliberately does not know: what delivering a message means on a platform.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from pydantic import ValidationError

from switchboard.protocol import (
    MCP_PROTOCOL_VERSION,
    METHOD_GATES,
    AcknowledgeParams,
    AcknowledgeResult,
    CapabilityDenied,
    CloseParams,
    OpenParams,
    OpenResult,
    OutgoingChunkParams,
    OutgoingCompleteParams,
    PublishParams,
    TypingParams,
    UnknownChannel,
    dump,
)
from switchboard.transport import ParamProblem, RpcError, invalid_params, method_not_found

from .hooks import ConnectorHooks
from .policy import PolicyChange
from .replies import ReplyHooks

__all__ = ["InboundHandlers"]

log = structlog.get_logger(__name__)

Handler = Callable[[Any], Awaitable[Any]]

_LEGACY_TYPING = "notifications/typing"


def _params(params: Any) -> Any:
    return {} if params is None else params


class InboundHandlers:
    """The request and notification handlers one served connection hands to its peer.

    What it knows (mcpl-protocol.md 2, 4.5-4.10; S-03 .. S-35):

    - ``initialize`` (echo the host's ``protocolVersion``, ``serverInfo``, the manifest at
      ``capabilities.experimental.mcpl``), ``notifications/initialized``, ``ping``,
      ``mcpl/manifest`` (the bare manifest, the same shape as at ``initialize``);
    - ``featureSets/update``: a Request goes to the policy state and is answered with the receipt,
      which becomes the grant in force once it is on the wire; a Notification can only narrow;
    - the channel methods, each in the same order: the grant (``-32002`` with ``data.capability``),
      then the params (``-32602``), then the channel (``-32023``), then the connector's hook.
      ``channels/outgoing/*`` only ever reach ``on_chunk``/``on_complete``: delivery happens through
      ``channels/publish`` alone (S-33);
    - methods that may arrive as a Request or a Notification (publish, typing, acknowledge, chunks)
      run the same checks either way; a refused Notification is logged, since it cannot be answered;
    - anything else gets ``-32601``.
    """

    __slots__ = ("_connector", "_log", "_notifications", "_on_policy", "_replies", "_requests")

    def __init__(
        self,
        connector: ConnectorHooks,
        replies: ReplyHooks,
        on_policy: Callable[[PolicyChange], None],
    ) -> None:
        """``on_policy`` commits a policy change once its receipt is on the wire."""
        self._connector = connector
        self._replies = replies
        self._on_policy = on_policy
        self._log = log.bind(connector=connector.name)
        channel_methods: dict[str, Handler] = {
            "channels/list": self._list,
            "channels/open": self._open,
            "channels/close": self._close,
            "channels/publish": self._publish,
            "channels/typing": self._typing,
            _LEGACY_TYPING: self._typing,
            "channels/acknowledge": self._acknowledge,
            "channels/outgoing/chunk": self._chunk,
            "channels/outgoing/complete": self._complete,
        }
        self._requests: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "featureSets/update": self._policy_request,
            "mcpl/manifest": self._manifest,
            **channel_methods,
        }
        if connector.manifest.tools:
            self._requests["tools/list"] = self._tools_list
            self._requests["tools/call"] = self._tools_call
        self._notifications: dict[str, Handler] = {
            "featureSets/update": self._policy_notification,
            **{
                method: handler
                for method, handler in channel_methods.items()
                if method not in ("channels/list", "channels/open", "channels/close")
            },
        }

    # -- entry points given to the peer --------------------------------------------------------

    async def on_request(self, method: str, params: Any) -> Any:
        """Answer one request; callbacks registered by the hook run once the answer is out."""
        handler = self._requests.get(method)
        if handler is None:
            raise method_not_found(method)
        replies = self._replies
        callbacks = replies.begin()
        try:
            result = await handler(params)
        finally:
            replies.end()
        if callbacks:
            replies.after(result, callbacks)
        return result

    async def on_notification(self, method: str, params: Any) -> None:
        """Handle one notification; refusals are logged because nobody can be told."""
        handler = self._notifications.get(method)
        if handler is None:
            if method == "notifications/initialized":
                self._connector.initialized = True
            else:  # notifications/cancelled and anything unknown: nothing to do
                self._log.debug("notification_ignored", method=method)
            return
        replies = self._replies
        callbacks = replies.begin()
        try:
            await handler(params)
        except (RpcError, ValidationError) as exc:
            self._log.warning("notification_refused", method=method, error=str(exc))
        finally:
            replies.end()
        if callbacks:
            replies.after(None, callbacks)

    # -- checks --------------------------------------------------------------------------------

    def _gate(self, method: str) -> None:
        gate = METHOD_GATES[method]
        if not self._connector.policy.allows(gate):
            raise CapabilityDenied(gate)

    def _known(self, channel_id: str) -> None:
        if channel_id not in self._connector.channels:
            raise UnknownChannel(channel_id)

    # -- MCP basics and policy -----------------------------------------------------------------

    async def _initialize(self, params: Any) -> dict[str, Any]:
        params = params if isinstance(params, dict) else {}
        version = params.get("protocolVersion")
        connector = self._connector
        client = params.get("clientInfo")
        connector.host_info = dict(client) if isinstance(client, dict) else {}
        capabilities = params.get("capabilities")
        experimental = capabilities.get("experimental") if isinstance(capabilities, dict) else None
        mcpl = experimental.get("mcpl") if isinstance(experimental, dict) else None
        connector.host_advertisement = dict(mcpl) if isinstance(mcpl, dict) else None
        return {
            "protocolVersion": version if isinstance(version, str) else MCP_PROTOCOL_VERSION,
            "capabilities": connector.manifest.capabilities(),
            "serverInfo": {"name": connector.name, "version": connector.version},
        }

    async def _ping(self, params: Any) -> dict[str, Any]:
        return {}

    async def _manifest(self, params: Any) -> dict[str, Any]:
        return self._connector.manifest.mcpl()

    async def _policy_request(self, params: Any) -> dict[str, Any]:
        connector = self._connector
        change, receipt = connector.policy.apply_request(params)
        self._replies.expect(receipt, lambda: self._on_policy(change))
        self._log.info("policy_received", granted=sorted(change.active), degraded="mode" in receipt)
        return receipt

    async def _policy_notification(self, params: Any) -> None:
        ignored = self._connector.policy.apply_notification(params)
        if ignored:
            # A Notification cannot widen anything or make the connection ready (S-04).
            self._log.warning("policy_notification_members_ignored", members=ignored)

    # -- channels ------------------------------------------------------------------------------

    async def _list(self, params: Any) -> dict[str, Any]:
        self._gate("channels/list")
        return {"channels": [dump(d) for d in self._connector.channels.descriptors()]}

    async def _open(self, params: Any) -> dict[str, Any]:
        self._gate("channels/open")
        parsed = OpenParams.model_validate(_params(params))
        connector = self._connector
        opened = await connector.on_open(parsed)
        result = opened if isinstance(opened, OpenResult) else OpenResult(channel=opened)
        connector.channels.put(result.channel)
        connector.channels.set_open(result.channel.id, True)
        return dump(result)

    async def _close(self, params: Any) -> dict[str, Any]:
        self._gate("channels/close")
        parsed = CloseParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        connector = self._connector
        await connector.on_close(parsed)
        connector.channels.set_open(parsed.channel_id, False)
        return {"closed": True}

    async def _publish(self, params: Any) -> dict[str, Any]:
        self._gate("channels/publish")
        parsed = PublishParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        message_id = await self._connector.on_publish(parsed)
        return {"delivered": True, "messageId": message_id}

    async def _typing(self, params: Any) -> dict[str, Any]:
        self._gate("channels/typing")
        parsed = TypingParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        await self._connector.on_typing(parsed)
        return {}

    async def _acknowledge(self, params: Any) -> dict[str, Any]:
        self._gate("channels/acknowledge")
        parsed = AcknowledgeParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        answer = await self._connector.on_acknowledge(parsed)
        if isinstance(answer, bool):
            answer = AcknowledgeResult(acknowledged=answer)
        return dump(answer)

    async def _chunk(self, params: Any) -> dict[str, Any]:
        self._gate("channels/outgoing/chunk")
        parsed = OutgoingChunkParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        await self._connector.on_chunk(parsed)
        return {}

    async def _complete(self, params: Any) -> dict[str, Any]:
        self._gate("channels/outgoing/complete")
        parsed = OutgoingCompleteParams.model_validate(_params(params))
        self._known(parsed.channel_id)
        await self._connector.on_complete(parsed)
        return {}

    # -- MCP tools (only when the connector offers them) ---------------------------------------

    def _tools_gate(self) -> None:
        # In MCPL mode tools need the grant; before any policy exchange the
        # connector behaves as a plain MCP server and tools work.
        policy = self._connector.policy
        if policy.ready and not policy.allows("tools"):
            raise CapabilityDenied("tools")

    async def _tools_list(self, params: Any) -> dict[str, Any]:
        self._tools_gate()
        return {"tools": await self._connector.list_tools()}

    async def _tools_call(self, params: Any) -> dict[str, Any]:
        self._tools_gate()
        params = _params(params)
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str):
            raise invalid_params(ParamProblem("name", "the tool's name is required, as a string"))
        arguments = params.get("arguments")
        return await self._connector.call_tool(
            name, arguments if isinstance(arguments, dict) else {}
        )
