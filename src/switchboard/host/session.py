"""One MCPL connection, seen from the host: handshake, grant, and the inbound methods.

A :class:`ConnectorSession` lives for one link. It runs the handshake (``initialize`` with
``experimental.mcpl``, ``notifications/initialized``, then the ``featureSets/update``
*Request* that carries the effective grant, sent even when the grant is empty), and answers
what the connector sends: ``channels/register``, ``channels/changed``, ``channels/list``,
``channels/incoming`` and ``push/event``. Every privileged inbound method is checked against the
grant *as it stands when the message arrives*; before the policy exchange completes the grant
is treated as empty, so the answer is ``-32002`` with ``data.capability`` (MCPL §5.3).

Readiness is set by the peer's reader the moment the receipt is read (``on_response``), so a
``channels/register`` that the connector sends straight after its receipt is never rejected by a
race between the handshake task and the dispatcher.

It knows nothing of supervision (see :mod:`switchboard.host.supervisor`) or of agents.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

import anyio
import structlog
from pydantic import ValidationError

from switchboard import __version__
from switchboard.channels import ChannelRef, ChannelRegistry, DescriptorLike, Rejected
from switchboard.config import ConnectorConfig
from switchboard.host.events import Observer
from switchboard.host.incoming import IncomingHandler
from switchboard.host.outcome import PublishOutcome, PublishStatus, Refusal
from switchboard.protocol import (
    CAPABILITY_PATHS,
    MCP_PROTOCOL_VERSION,
    METHOD_GATES,
    CapabilityDenied,
    ChangedParams,
    FeatureSetNotEnabled,
    Grant,
    Manifest,
    RegisterParams,
    UnknownFeatureSet,
    derive_enabled,
    effective_grant,
    host_advertisement,
    parse_manifest,
    parse_receipt,
    validate_descriptors,
)
from switchboard.protocol.messages import ChannelDescriptor, DescriptorProblem
from switchboard.store import MessageStore
from switchboard.transport import (
    METHOD_NOT_FOUND,
    Link,
    LinkClosedError,
    Peer,
    RequestTimeoutError,
    RpcError,
)

log = structlog.get_logger(__name__)


class SessionState(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    MCP_ONLY = "mcp-only"
    CLOSED = "closed"


class ConnectorSession:
    """The host side of one connection to one connector."""

    def __init__(
        self,
        config: ConnectorConfig,
        *,
        registry: ChannelRegistry,
        store: MessageStore,
        observer: Observer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.server_id = config.id
        self.state = SessionState.CONNECTING
        self.grant = Grant.empty()
        self.manifest: Manifest | None = None
        self.legacy_policy = False
        self.publish_notification_only = False
        self.enabled_feature_sets: frozenset[str] = frozenset()
        self._registry = registry
        self._store = store
        self._observer = observer
        self._clock = clock
        self._peer: Peer | None = None
        self.link: Link | None = None
        self._ready = anyio.Event()
        self._channel_patterns = config.channels
        self._incoming = IncomingHandler(
            server_id=self.server_id,
            registry=registry,
            store=store,
            observer=observer,
            clock=clock,
            permits=self.channel_permitted,
        )
        self._handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "ping": self._ping,
            "channels/register": self._register,
            "channels/changed": self._changed_request,
            "channels/list": self._list,
            "channels/incoming": self._incoming.handle,
            "push/event": self._push_event,
        }
        self.log = log.bind(server_id=self.server_id)

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def peer(self) -> Peer | None:
        return self._peer

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def run(self, link: Link) -> None:
        """Handshake and serve until the link ends. Returns when the connection is over."""
        peer = Peer(
            link,
            on_request=self._on_request,
            on_notification=self._on_notification,
            name=f"connector:{self.server_id}",
            default_timeout=self.config.request_timeout,
        )
        self._peer = peer
        self.link = link
        try:
            async with anyio.create_task_group() as tg:

                async def read_until_closed() -> None:
                    try:
                        await peer.run()
                    finally:
                        tg.cancel_scope.cancel()

                tg.start_soon(read_until_closed)
                await self._handshake(peer)
                await anyio.sleep_forever()
        finally:
            self.state = SessionState.CLOSED
            self.grant = Grant.empty()
            self._peer = None
            with anyio.CancelScope(shield=True):
                await peer.aclose()

    async def _handshake(self, peer: Peer) -> None:
        result = await peer.request(
            "initialize",
            {
                "protocolVersion": MCP_PROTOCOL_VERSION,
                "capabilities": {"experimental": {"mcpl": host_advertisement()}},
                "clientInfo": {"name": "switchboard", "version": __version__},
            },
        )
        manifest = parse_manifest(result if isinstance(result, Mapping) else {})
        await peer.notify("notifications/initialized", {})
        if manifest is None:
            self.state = SessionState.MCP_ONLY
            self.log.warning("connector_mcp_only", reason="no experimental.mcpl in initialize")
            self._observer("mcp-only", self.server_id, {})
            return
        self.manifest = manifest
        for note in manifest.diagnostics:
            self.log.info("manifest_diagnostic", note=note)
        grant = effective_grant(manifest.advertised, self.config.grant)
        status = derive_enabled(manifest.feature_sets, grant, self.config.enabled_feature_sets, ())
        enabled = sorted(name for name, why in status.items() if why is None)
        disabled = sorted(name for name, why in status.items() if why is not None)
        params: dict[str, Any] = {
            "effectiveCapabilities": sorted(grant.leaves()),
            "deniedCapabilities": sorted((manifest.advertised & CAPABILITY_PATHS) - grant.leaves()),
            "enabled": enabled,
            "disabled": disabled,
        }
        pending = (grant, frozenset(enabled))

        def receipt_read(value: Any) -> None:
            # Runs in the peer's reader, before any later inbound message is dispatched.
            receipt = parse_receipt(value if isinstance(value, Mapping) else {})
            if receipt.accepted:
                self._become_ready(*pending)
                if receipt.mode is not None:
                    self.log.info(
                        "policy_receipt_degraded",
                        mode=receipt.mode,
                        unavailable=receipt.unavailable,
                    )
            else:
                self.state = SessionState.MCP_ONLY
                self.log.warning(
                    "policy_refused", fallback=receipt.fallback, reason=receipt.raw.get("reason")
                )

        try:
            await peer.request("featureSets/update", params, on_response=receipt_read)
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                self.state = SessionState.MCP_ONLY
                self.log.warning("policy_request_failed", code=exc.code, message=exc.message)
                return
            # A pre-0.5 connector (peers.md: heartbeat, editor, dog-events) does not know the
            # Request form. Compatibility decision (docs/architecture.md): tell it the policy in
            # the 0.4 Notification form and enforce the same grant on our side.
            self.legacy_policy = True
            self.log.warning(
                "policy_request_unsupported_degraded_to_notification",
                effective=params["effectiveCapabilities"],
            )
            self._become_ready(*pending)
            await peer.notify("featureSets/update", params)
        if self.state is SessionState.READY:
            self._observer(
                "ready",
                self.server_id,
                {"grant": sorted(self.grant.leaves()), "legacy": self.legacy_policy},
            )

    def _become_ready(self, grant: Grant, enabled: frozenset[str]) -> None:
        self.grant = grant
        self.enabled_feature_sets = enabled
        self.state = SessionState.READY
        self._ready.set()

    # -- dispatch ----------------------------------------------------------------------------

    def gate_check(self, method: str) -> None:
        """Raise -32002 unless the method's gate is granted and the session is ready."""
        gate = METHOD_GATES.get(method)
        if gate is None:
            return
        if self.state is not SessionState.READY or not self.grant.allows(gate):
            raise CapabilityDenied(gate)

    async def _on_request(self, method: str, params: Any) -> Any:
        handler = self._handlers.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
        self.gate_check(method)
        return await handler(params)

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == "channels/changed":
            try:
                self.gate_check(method)
                await self._changed(params, notification=True)
            except (CapabilityDenied, ValidationError) as exc:
                self.log.warning("changed_notification_dropped", reason=str(exc))
        elif method == "notifications/message":
            self.log.info("connector_log", params=params)
        else:
            self.log.debug("notification_ignored", method=method)

    # -- handlers ----------------------------------------------------------------------------

    async def _ping(self, params: Any) -> dict[str, Any]:
        return {}

    def channel_permitted(self, channel_id: str) -> bool:
        """Per-channel narrowing from the config (``channels`` glob patterns)."""
        patterns = self._channel_patterns
        return patterns is None or any(fnmatchcase(channel_id, p) for p in patterns)

    def _authorize(self, descriptor: DescriptorLike) -> str | None:
        if not self.grant.allows("channels.register"):
            return "capability_denied"
        if not self.channel_permitted(descriptor.id):
            return "capability_denied"
        return None

    @staticmethod
    def _items(raw: list[Any]) -> list[ChannelDescriptor | Rejected]:
        items: list[ChannelDescriptor | Rejected] = []
        for v in validate_descriptors(raw):
            if isinstance(v, DescriptorProblem):
                items.append(Rejected(v.id, v.reason))
            else:
                items.append(v)
        return items

    async def _register(self, params: Any) -> dict[str, Any]:
        p = RegisterParams.model_validate(params)
        change = self._registry.register(
            self.server_id, self._items(p.channels), authorize=self._authorize
        )
        results = [_item(r) for r in change.results]
        self._observer(
            "register", self.server_id, {"accepted": [r.channel_id for r in change.added]}
        )
        return {"results": results}

    async def _changed_request(self, params: Any) -> dict[str, Any]:
        return await self._changed(params, notification=False)

    async def _changed(self, params: Any, *, notification: bool) -> dict[str, Any]:
        p = ChangedParams.model_validate(params)
        change = self._registry.change(
            self.server_id,
            added=self._items(p.added or []),
            removed=[str(x) for x in (p.removed or [])],
            updated=self._items(p.updated or []),
            authorize=self._authorize,
        )
        results = [_item(r) for r in change.results]
        if notification:
            for r in change.results:
                if not r.accepted:
                    self.log.warning(
                        "changed_item_filtered",
                        channel_id=r.id,
                        reason=r.reason,
                        form="notification",
                    )
        self._observer(
            "changed",
            self.server_id,
            {
                "added": [r.channel_id for r in change.added],
                "removed": [r.channel_id for r in change.removed],
            },
        )
        return {"results": results}

    async def _list(self, params: Any) -> dict[str, Any]:
        entries = self._registry.server_entries(self.server_id)
        return {"channels": [_descriptor_wire(e.descriptor) for e in entries]}

    async def _push_event(self, params: Any) -> Any:
        return await self._incoming.push_event(params, self._check_feature_set)

    def _check_feature_set(self, name: str, needs: str) -> None:
        manifest = self.manifest
        if manifest is None or name not in manifest.feature_sets:
            raise UnknownFeatureSet(name)
        if name not in self.enabled_feature_sets:
            raise FeatureSetNotEnabled(name)
        if needs not in manifest.feature_sets[name].uses:
            # Declaration mismatch (MCPL §6): the set does not declare what it uses.
            self.log.warning("feature_set_declaration_mismatch", feature_set=name, needs=needs)
            raise CapabilityDenied(needs)

    # -- outbound ----------------------------------------------------------------------------

    def ref(self, channel_id: str) -> ChannelRef:
        return ChannelRef(self.server_id, channel_id)


def _item(r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id, "accepted": r.accepted}
    if r.reason is not None:
        out["reason"] = r.reason
    return out


def _descriptor_wire(descriptor: Any) -> dict[str, Any]:
    dump = getattr(descriptor, "model_dump", None)
    if dump is not None:
        result: dict[str, Any] = dump(by_alias=True, exclude_none=True)
        return result
    return dict(descriptor)


async def publish_over(
    session: ConnectorSession, channel_id: str, content: list[dict[str, Any]], conversation_id: str
) -> PublishOutcome:
    """Send ``channels/publish`` as a Request and report what the connector said.

    ``delivered`` only on ``{"delivered": true, "messageId": ...}``; an error answer is
    ``failed``; silence, a lost link or a malformed answer is ``unknown`` (it may have gone out).
    """
    sid = session.server_id
    peer = session.peer
    if peer is None:
        return PublishOutcome.refused(
            Refusal.SERVER_GONE,
            f"server {sid} is not connected",
            server_id=sid,
            channel_id=channel_id,
        )
    params = {"conversationId": conversation_id, "channelId": channel_id, "content": content}
    timeout = session.config.publish_timeout
    try:
        if session.publish_notification_only:
            await peer.notify("channels/publish", params)
            return _unconfirmed(
                sid, channel_id, "sent as a notification; this connector gives no receipt"
            )
        result = await peer.request("channels/publish", params, timeout=timeout)
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND and not session.publish_notification_only:
            # A connector that only takes the notification form (peers.md: mcpl-editor).
            session.publish_notification_only = True
            session.log.warning("publish_request_unsupported_using_notification")
            await peer.notify("channels/publish", params)
            return _unconfirmed(
                sid, channel_id, "sent as a notification; this connector gives no receipt"
            )
        return PublishOutcome(
            PublishStatus.FAILED,
            sid,
            channel_id,
            reason=f"the connector refused the publish: {exc.message} (code {exc.code})",
            detail={"code": exc.code, "data": exc.data},
        )
    except RequestTimeoutError:
        return _unconfirmed(sid, channel_id, f"no answer from the connector within {timeout:g} s")
    except LinkClosedError:
        return _unconfirmed(
            sid, channel_id, "the link to the connector was lost before it answered"
        )
    if isinstance(result, Mapping):
        delivered = result.get("delivered")
        message_id = result.get("messageId")
        if delivered is True and isinstance(message_id, str | int):
            return PublishOutcome(
                PublishStatus.DELIVERED, sid, channel_id, message_id=str(message_id)
            )
        if delivered is False:
            return PublishOutcome(
                PublishStatus.FAILED,
                sid,
                channel_id,
                reason="the connector reported that the message was not delivered",
                detail={"result": dict(result)},
            )
    return _unconfirmed(sid, channel_id, "the connector's answer did not confirm delivery")


def _unconfirmed(server_id: str, channel_id: str, reason: str) -> PublishOutcome:
    return PublishOutcome(PublishStatus.UNKNOWN, server_id, channel_id, reason=reason)
