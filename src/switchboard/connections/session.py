"""One MCPL connection, seen from the host: handshake, grant, and the inbound methods.

A :class:`ConnectorSession` lives for one link: it runs the handshake, answers what the
connector sends with every privileged method checked against the grant as it stands when the
message arrives (MCPL §5.3), follows manifest changes, judges pre-0.5 connectors by 0.4 rules,
and says out loud what it refuses. It is also the connector's owner
(:class:`~switchboard.connections.owner.ConnectorOwner`): every request agents and the
lifecycle make of the connector goes out over its link.

When the host stops (:meth:`ConnectorSession.finish`), every request that arrives from then on
is refused ``shutting-down`` and the requests already taken are answered before the link closes.

It knows nothing of supervision (:mod:`.supervisor`) or of agents.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from fnmatch import fnmatchcase
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from pydantic import ValidationError

from switchboard import __version__
from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.config import ConnectorConfig
from switchboard.connections.compat import (
    HOLD_GRACE,
    HeldMessages,
    legacy_reading,
    pre05_reason,
)
from switchboard.connections.connector_tools import ConnectorTools
from switchboard.connections.diagnostics import (
    CAPABILITY_DENIED,
    DESCRIPTOR_REJECTED,
    INCOMING_REFUSED,
    INFERENCE_REFUSED,
    PUSH_REFUSED,
    REQUEST_REFUSED,
    DisabledFeatureSet,
    RefusalLog,
    RefusalStatistics,
    disabled_feature_sets,
    log_disabled,
)
from switchboard.connections.incoming import IncomingHandler
from switchboard.connections.inference import INFERENCE_LEAVES, InferenceAgents, InferenceServer
from switchboard.connections.limits import RegistrationLimits, TokenBucket, shutting_down_error
from switchboard.connections.manifest_watch import ManifestWatch
from switchboard.connections.owner import ANSWER_WAIT, SessionState
from switchboard.connections.publish_request import publish_over
from switchboard.connections.registration import RegistrationHandler
from switchboard.events import (
    ChannelsRemoved,
    ConnectorMcpOnly,
    ConnectorReady,
    ConnectorRefused,
    EventBus,
    InferenceAnswered,
    ManifestApplied,
)
from switchboard.protocol import (
    CAPABILITY_PATHS,
    MCP_PROTOCOL_VERSION,
    METHOD_GATES,
    CapabilityDenied,
    FeatureSetNotEnabled,
    Grant,
    IncomingRawParams,
    Manifest,
    RegisterFastParams,
    UnknownFeatureSet,
    check_incoming_params,
    derive_enabled,
    effective_grant,
    host_advertisement,
    parse_manifest,
    parse_receipt,
    read_error,
    register_channels,
)
from switchboard.protocol.manifest_diff import Narrowing
from switchboard.refusals.outcome import PublishOutcome
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.store import MessageStoreProtocol
from switchboard.transport import (
    METHOD_NOT_FOUND,
    Link,
    LinkClosedError,
    ParamsReader,
    Peer,
    RequestTimeoutError,
    RpcError,
    method_not_found,
)

__all__ = ["ANSWER_WAIT", "FINISH_QUIET", "ConnectorSession", "SessionState", "publish_over"]


#: Seconds without a message from the connector after which a stopping host closes its link
#: (once the requests it took are answered).
FINISH_QUIET = 0.1

log = structlog.get_logger(__name__)


class ConnectorSession:
    """The host side of one connection to one connector.

    A :class:`ConnectorSession` lives for one link. It runs the handshake (``initialize`` with
    ``experimental.mcpl``, ``notifications/initialized``, then the ``featureSets/update`` *Request*
    that carries the effective grant, sent even when the grant is empty), and answers what the
    connector sends: ``channels/register``, ``channels/changed``, ``channels/list``,
    ``channels/incoming``, ``push/event``, and ``inference/request`` and ``model/info`` (answered
    by an agent's sampling, :class:`~switchboard.connections.inference.InferenceServer`). Every
    privileged inbound method is checked against the grant *as it stands when the message
    arrives*; before the policy exchange completes the grant is treated as empty, so the answer
    is ``-32002`` with ``data.capability`` (MCPL §5.3).

    A pre-0.5 connector (:mod:`~switchboard.connections.compat`, the ``compat`` setting) is judged
    by 0.4 rules instead: its manifest is read the 0.4 way, privileged messages it sends before the
    exchange completes are held and judged once it does (completed as a 0.4 Notification after a
    grace when the connector holds back its answer), and its pushes need the grant, not a ``uses``
    declaration. A ``-32601`` answer to the policy Request is the late sign of one (under ``compat =
    "strict"`` it leaves the connection MCP-only).

    Readiness is set by the peer's reader the moment the receipt is read (``on_response``), so a
    ``channels/register`` that the connector sends straight after its receipt is never rejected by a
    race between the handshake task and the dispatcher. The session's peer reads every error answer
    with :func:`switchboard.protocol.read_error`, so a request the host sends over it raises the
    MCPL class of the code (``except UnknownChannel:``), or a plain ``RpcError``.

    After the handshake the manifest can change (MCPL §17): ``mcpl/manifestChanged`` goes to the
    session's :class:`~switchboard.connections.manifest_watch.ManifestWatch`, which fetches and
    diffs it; the session adopts the narrowed grant (dropping this connection's registrations when
    ``channels.register`` is revoked, as if it had never been advertised) and tells the connector
    with a ``featureSets/update`` Request.

    What happened is told on the host's :class:`~switchboard.events.EventBus`: ``ConnectorReady`` or
    ``ConnectorMcpOnly`` after the handshake, ``ChannelsRemoved`` (when a revocation drops the
    registrations) and ``ManifestApplied`` after a manifest change; registration and incoming emit
    their own events.

    It says out loud what it refuses or leaves off (docs/operations.md, "Logs"): at the handshake,
    one line per feature set the policy leaves disabled, with the config line that would enable it
    (:mod:`~switchboard.connections.diagnostics`); every refusal it gives the connector, counted and
    rate-limited (:meth:`ConnectorSession.statistics`); and a handshake still unfinished after
    ``request_timeout``, with what it is waiting for. The grant never includes a leaf Switchboard
    cannot serve, whatever the configured patterns match: the inference leaves
    (:data:`~switchboard.connections.inference.INFERENCE_LEAVES`) only when an agent could answer
    the connector's ``inference/request`` (:class:`~.inference.InferenceServer`).
    """

    def __init__(
        self,
        config: ConnectorConfig,
        *,
        registry: ChannelRegistry,
        store: MessageStoreProtocol,
        events: EventBus,
        clock: Callable[[], float] = time.time,
        noted: RateLimitedLog | None = None,
        inference: InferenceAgents | None = None,
    ) -> None:
        self.config = config
        self.server_id = config.id
        self.state = SessionState.CONNECTING
        self.grant = Grant.empty()
        self.manifest: Manifest | None = None
        self.legacy_policy = False
        self.compat_reason: str | None = None
        self._ready_told = False
        self._policy_pending: tuple[dict[str, Any], tuple[Grant, frozenset[str]]] | None = None
        """Why this connection is judged by 0.4 rules (docs/compatibility.md), or None."""
        self.publish_notification_only = False
        self.enabled_feature_sets: frozenset[str] = frozenset()
        self.disabled_feature_sets: tuple[DisabledFeatureSet, ...] = ()
        self.log = log.bind(server_id=self.server_id)
        self.refusals = RefusalLog(self.log, notify=self._tell_refused)
        #: What this connector may cause again and again (a log notification, a malformed
        #: announcement, a tool it lists badly ...), logged rate-limited and counted: the
        #: host's per-server log (``ConnectorLogs``), restarted when the connection ends.
        self.noted = noted if noted is not None else RateLimitedLog(self.log)
        self._waiting_for = "the link to open"
        self._registry = registry
        self._store = store
        self._events = events
        self._clock = clock
        self._peer: Peer | None = None
        self._task_group: TaskGroup | None = None
        self.link: Link | None = None
        self._ready = anyio.Event()
        self._channel_patterns = config.channels
        self._incoming = IncomingHandler(
            server_id=self.server_id,
            registry=registry,
            store=store,
            events=events,
            clock=clock,
            permits=None if config.channels is None else self.channel_permitted,
            refusals=self.refusals,
            noted=self.noted,
            rate=(
                None
                if config.max_messages_per_second is None
                else TokenBucket(
                    config.max_messages_per_second, max(1.0, config.max_messages_per_second)
                )
            ),
        )
        self._registration = RegistrationHandler(
            server_id=self.server_id,
            registry=registry,
            events=events,
            allows=self._grant_allows,
            permits=None if config.channels is None else self.channel_permitted,
            limits=RegistrationLimits(config.max_channels, config.max_registrations_per_second),
            after_answer=self._after_answer,
            noted=self.noted,
        )
        #: ``inference/request`` and ``model/info``, answered by an agent's sampling.
        self.inference = InferenceServer(
            config,
            inference,
            check_feature_set=self._check_feature_set,
            allows=self._grant_allows,
            peer=self._current_peer,
            refused=self._refused,
            answered=self._inference_answered,
        )
        self._handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "ping": self._ping,
            "inference/request": self.inference.request,
            "model/info": self.inference.model_info,
            "channels/register": self._register,
            "channels/changed": self._changed_request,
            "channels/list": self._registration.list,
            "channels/incoming": self._incoming.handle,
            "push/event": self._push_event,
        }
        self.manifest_watch = ManifestWatch(self, min_interval=config.manifest_fetch_interval)
        #: The connector's MCP tools, fetched once ready and followed (docs/tools.md).
        self.tools = ConnectorTools(self, events=events)
        self._held = HeldMessages(self._judge, self.noted)
        #: The host is stopping: every request is refused (``shutting-down``) from now on.
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def peer(self) -> Peer | None:
        return self._peer

    # -- the owner of this connector (switchboard.connections.owner) -------------------------

    @property
    def connected(self) -> bool:
        """Whether the link is up (a request can be sent)."""
        return self._peer is not None

    def _live_peer(self) -> Peer:
        peer = self._peer
        if peer is None:
            raise LinkClosedError(f"connector {self.server_id!r} is not connected")
        return peer

    async def publish(
        self, channel_id: str, content: list[dict[str, Any]], conversation_id: str
    ) -> PublishOutcome:
        """``channels/publish`` on this link (:func:`~.publish_request.publish_over`)."""
        return await publish_over(self, channel_id, content, conversation_id)

    async def open_channel(self, params: Mapping[str, Any]) -> Any:
        """``channels/open``; the connector's result."""
        return await self._live_peer().request("channels/open", params)

    async def close_channel(self, channel_id: str) -> Any:
        """``channels/close``; the connector's result."""
        return await self._live_peer().request("channels/close", {"channelId": channel_id})

    async def acknowledge(self, params: Mapping[str, Any]) -> Any:
        """``channels/acknowledge``; the connector's result."""
        return await self._live_peer().request("channels/acknowledge", params)

    async def typing(self, params: Mapping[str, Any]) -> None:
        """``channels/typing``, a notification."""
        await self._live_peer().notify("channels/typing", params)

    async def stream(self, method: str, params: Mapping[str, Any]) -> None:
        """One notification of streamed speech (``channels/outgoing/...``)."""
        await self._live_peer().notify(method, params)

    async def before_inference(self, params: Mapping[str, Any], answer_within: float) -> Any:
        """``context/beforeInference``, answered within ``answer_within`` seconds."""
        peer = self._live_peer()
        return await peer.request("context/beforeInference", params, timeout=answer_within)

    def _current_peer(self) -> Peer | None:
        return self._peer

    def _inference_answered(self, agent: str, model: str) -> None:
        self._events.emit(InferenceAnswered(self.server_id, agent, model))

    async def inference_phase(self, params: Mapping[str, Any]) -> None:
        """``inference/lifecycle``, a notification."""
        await self._live_peer().notify("inference/lifecycle", params)

    def _after_answer(self, function: Callable[[], None]) -> None:
        """Run ``function`` once the answer now being returned has left (at most
        :data:`ANSWER_WAIT` later); at once when the connection is not running."""
        group = self._task_group
        try:
            if group is not None:
                group.start_soon(self._when_written, function)
                return
        except RuntimeError:  # the group is closing
            pass
        function()

    async def _when_written(self, function: Callable[[], None]) -> None:
        try:
            with anyio.move_on_after(ANSWER_WAIT):
                await self.output_written()
        finally:
            function()

    async def output_written(self) -> None:
        """Return once what the host sent this connector so far has left (see
        :meth:`Peer.written`); at once when it is not connected."""
        peer = self._peer
        if peer is not None:
            await peer.written()

    def stop_taking(self) -> None:
        """The host is stopping: refuse every request from now on, ``-32603`` with
        ``data.reason = "shutting-down"`` (nothing of it taken, so a connector sends it again
        to the next host); the requests already taken are still answered."""
        self._stopping = True

    async def finish(self, grace: float) -> None:
        """Refuse new requests (:meth:`stop_taking`) and return once every request received is
        answered and the connector sent nothing for :data:`FINISH_QUIET` seconds (what it sent
        before it read a refusal is answered too), or after ``grace`` seconds; the caller
        closes the link after."""
        self._stopping = True
        peer = self._peer
        if peer is not None:
            with anyio.move_on_after(grace):
                await peer.quiet(FINISH_QUIET)

    @property
    def mcpl_active(self) -> bool:
        """Whether MCPL is in force on this connection (ready, not MCP-only, not closed)."""
        return self.state is SessionState.READY

    async def wait_ready(self) -> None:
        await self._ready.wait()

    def _tell_refused(self, kind: str, method: str, reason: str, count: int) -> None:
        """Tell the bus about a refusal the refusal log counted (the status surface shows it)."""
        self._events.emit(ConnectorRefused(self.server_id, kind, method, reason, count))

    def statistics(self) -> RefusalStatistics:
        """What this connection was refused so far, counted (for a status surface)."""
        return self.refusals.statistics()

    async def _watch_connecting(self) -> None:
        """Warn when the handshake is still unfinished after ``request_timeout``."""
        timeout = self.config.request_timeout
        await anyio.sleep(timeout)
        if self.state is SessionState.CONNECTING:
            self.log.warning(
                "connector_stuck_connecting",
                waiting_for=self._waiting_for,
                seconds=timeout,
            )

    async def run(self, link: Link) -> None:
        """Handshake and serve until the link ends. Returns when the connection is over."""
        peer = Peer(
            link,
            on_request=self._on_request,
            on_notification=self._on_notification,
            name=f"connector:{self.server_id}",
            default_timeout=self.config.request_timeout,
            read_error=read_error,
            # The hot paths: a batch of messages, or of descriptors, read and checked in one
            # pass from the frame's bytes.
            params_readers={
                "channels/incoming": ParamsReader(IncomingRawParams, check_incoming_params),
                "channels/register": ParamsReader(RegisterFastParams, register_channels),
            },
        )
        self._peer = peer
        self.link = link
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg

                async def read_until_closed() -> None:
                    try:
                        await peer.run()
                    finally:
                        tg.cancel_scope.cancel()

                tg.start_soon(read_until_closed)
                tg.start_soon(self.manifest_watch.run)
                tg.start_soon(self.tools.run)
                tg.start_soon(self._watch_connecting)
                tg.start_soon(self._held.run)
                tg.start_soon(self._complete_by_grace, peer)
                await self._handshake(peer)
                await anyio.sleep_forever()
        finally:
            self._task_group = None
            self.refusals.flush()
            self.noted.restart()
            self.state = SessionState.CLOSED
            self.grant = Grant.empty()
            self._peer = None
            with anyio.CancelScope(shield=True):
                await peer.aclose()

    async def _handshake(self, peer: Peer) -> None:
        self._waiting_for = "the answer to initialize"
        try:
            result = await peer.request(
                "initialize",
                {
                    "protocolVersion": MCP_PROTOCOL_VERSION,
                    "capabilities": {"experimental": {"mcpl": host_advertisement()}},
                    "clientInfo": {"name": "switchboard", "version": __version__},
                },
            )
        except RequestTimeoutError:
            self._log_handshake_timeout()
            raise
        manifest = parse_manifest(result if isinstance(result, Mapping) else {})
        await peer.notify("notifications/initialized", {})
        if manifest is None:
            self.state = SessionState.MCP_ONLY
            self._events.emit(
                ConnectorMcpOnly(self.server_id, reason="no experimental.mcpl in initialize")
            )
            return
        reason = pre05_reason(manifest, self.config.compat)
        if reason is not None:
            self._enter_compat(reason)
            manifest = legacy_reading(manifest)
        else:
            self._held.release()  # a 0.5 connector is never held (H-05)
        for note in manifest.diagnostics:
            self.noted.note(
                ("manifest_diagnostic",), "manifest_diagnostic", level="info", note=note
            )
        pending = self._plan(manifest)
        params = _policy_params(manifest, *pending)

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
                self._policy_failed()
                self.log.warning(
                    "policy_refused", fallback=receipt.fallback, reason=receipt.raw.get("reason")
                )

        self._waiting_for = "the featureSets/update receipt"
        self._policy_pending = (params, pending)
        try:
            await peer.request("featureSets/update", params, on_response=receipt_read)
        except RequestTimeoutError:
            if self.legacy_policy and self.state is SessionState.READY:
                self.log.info("policy_request_never_answered", completed_as="0.4 notification")
                return
            self._log_handshake_timeout()
            raise
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                self._policy_failed()
                self.log.warning("policy_request_failed", code=exc.code, message=exc.message)
                return
            if self.config.compat == "strict":
                self._policy_failed()
                self.log.warning(
                    "policy_request_unsupported",
                    action='MCP only (compat = strict); set compat = "auto" to speak 0.4',
                )
                return
            # A pre-0.5 connector (peers.md: heartbeat, editor, dog-events) does not know the
            # Request form. Compatibility decision (docs/compatibility.md): tell it the policy in
            # the 0.4 Notification form and enforce the same grant on our side.
            if self.legacy_policy:
                return  # already completed in the 0.4 form while requests were held
            self.legacy_policy = True
            if self.compat_reason is None:
                self._enter_compat("the policy Request was answered -32601")
                manifest = legacy_reading(manifest)
                pending = self._plan(manifest)
                params = _policy_params(manifest, *pending)
            self.log.warning(
                "policy_request_unsupported_degraded_to_notification",
                effective=params["effectiveCapabilities"],
            )
            self._become_ready(*pending)
            await peer.notify("featureSets/update", params)
        self._tell_ready()

    def _tell_ready(self) -> None:
        """Emit ``ConnectorReady`` once per connection, when MCPL is in force."""
        if self.state is SessionState.READY and not self._ready_told:
            self._ready_told = True
            manifest = self.manifest
            declared = manifest.feature_sets if manifest is not None else {}
            self._events.emit(
                ConnectorReady(
                    self.server_id,
                    tuple(sorted(self.grant.leaves())),
                    self.legacy_policy,
                    dialect="mcpl-0.5" if self.compat_reason is None else "mcpl-0.4",
                    mcpl_version=manifest.version if manifest is not None else None,
                    enabled=tuple(sorted(self.enabled_feature_sets)),
                    disabled=tuple(sorted(set(declared) - self.enabled_feature_sets)),
                )
            )

    async def _complete_by_grace(self, peer: Peer) -> None:
        """Complete the exchange the 0.4 way when a pre-0.5 connector holds back its answer.

        A connector that awaits its own early ``channels/register`` before it reads further
        (peers.md §2, §5: the register-before-policy deadlock) would never answer the policy
        Request while that register is held. :data:`HOLD_GRACE` seconds after the first held
        message, the policy is sent as a Notification and put in force, so what is held is
        judged. An accepted receipt or ``-32601`` that still arrives changes nothing; a
        refusing receipt still switches MCPL off.
        """
        await self._held.first_held.wait()
        await anyio.sleep(HOLD_GRACE)
        if self.state is not SessionState.CONNECTING or self._policy_pending is None:
            return
        params, pending = self._policy_pending
        self.legacy_policy = True
        self.log.warning(
            "policy_unanswered_while_held",
            seconds=HOLD_GRACE,
            action="policy sent as a 0.4 Notification and put in force",
        )
        self._become_ready(*pending)
        await peer.notify("featureSets/update", params)
        self._tell_ready()

    def _plan(self, manifest: Manifest) -> tuple[Grant, frozenset[str]]:
        """The grant and enabled sets for ``manifest``, and what the policy leaves disabled."""
        self.manifest = manifest
        # A leaf Switchboard cannot serve now is never granted, whatever pattern matches it.
        why_not = self.inference.why_not()
        unserved = dict.fromkeys(INFERENCE_LEAVES, why_not) if why_not is not None else {}
        servable = manifest.advertised - unserved.keys()
        grant = effective_grant(servable, self.config.grant)
        status = derive_enabled(manifest.feature_sets, grant, self.config.enabled_feature_sets, ())
        enabled = frozenset(name for name, why in status.items() if why is None)
        self.disabled_feature_sets = disabled_feature_sets(
            manifest,
            grant,
            status,
            policy=self.config.grant,
            selection=self.config.enabled_feature_sets,
            unserved=unserved,
        )
        log_disabled(self.log, self.disabled_feature_sets)
        return grant, enabled

    def _enter_compat(self, reason: str) -> None:
        self.compat_reason = reason
        self.log.info("connector_compat_0_4", reason=reason, compat=self.config.compat)

    def _become_ready(self, grant: Grant, enabled: frozenset[str]) -> None:
        self.grant = grant
        self.enabled_feature_sets = enabled
        self.state = SessionState.READY
        self._ready.set()
        self._held.release()

    def _policy_failed(self) -> None:
        """No policy is in force: MCP only, and what was held is judged (and refused)."""
        self.state = SessionState.MCP_ONLY
        self._held.release()

    # -- manifest changes --------------------------------------------------------------------

    def adopt_manifest(self, manifest: Manifest, narrowing: Narrowing) -> None:
        """Put a changed manifest in force with its narrowed grant (host-first, MCPL §6.7).

        Called in the peer's reader, so the narrowing holds before the next inbound message.
        """
        register_revoked = self.grant.allows("channels.register") and not (
            narrowing.grant.allows("channels.register")
        )
        self.manifest = manifest
        self.grant = narrowing.grant
        self.enabled_feature_sets = narrowing.enabled
        if register_revoked:
            # Registrations were authorized under a grant that no longer holds: a revoked
            # capability behaves as if it had never been advertised (MCPL §5.4).
            gone = self._registry.remove_server(self.server_id)
            if gone:
                self._events.emit(ChannelsRemoved(self.server_id, gone))
        self._events.emit(
            ManifestApplied(
                self.server_id,
                manifest.revision,
                tuple(sorted(self.grant.leaves())),
                narrowing.impacts,
            )
        )

    async def tell_policy(self) -> None:
        """Send the grant in force as a ``featureSets/update`` Request (after a narrowing).

        A refusing receipt switches MCPL off for this connection (MCP-only), as at the
        handshake; no answer leaves the narrowed grant in force, which is already safe.
        """
        peer, manifest = self._peer, self.manifest
        if peer is None or manifest is None or not self.mcpl_active:
            return
        params = _policy_params(manifest, self.grant, self.enabled_feature_sets)
        if self.legacy_policy:
            await peer.notify("featureSets/update", params)
            return

        def receipt_read(value: Any) -> None:
            receipt = parse_receipt(value if isinstance(value, Mapping) else {})
            if not receipt.accepted:
                self.state = SessionState.MCP_ONLY
                self.grant = Grant.empty()
                self.noted.note(
                    ("policy_change_refused",),
                    "policy_change_refused",
                    fallback=receipt.fallback,
                    reason=receipt.raw.get("reason"),
                )

        try:
            await peer.request("featureSets/update", params, on_response=receipt_read)
        except (RpcError, RequestTimeoutError, LinkClosedError) as exc:
            self.noted.note(
                ("policy_change_unacknowledged",), "policy_change_unacknowledged", error=str(exc)
            )

    # -- dispatch ----------------------------------------------------------------------------

    def gate_check(self, method: str) -> None:
        """Raise -32002 unless the method's gate is granted and the session is ready."""
        gate = METHOD_GATES.get(method)
        if gate is None:
            return
        if self.state is not SessionState.READY or not self.grant.allows(gate):
            raise CapabilityDenied(gate)

    def _must_hold(self, method: str) -> bool:
        """Whether a privileged message waits (pre-0.5, before the policy, or behind others)."""
        if self.compat_reason is None or method not in METHOD_GATES:
            return False
        return not self._held.released or self._held.busy

    async def _on_request(self, method: str, params: Any) -> Any:
        if self._must_hold(method):
            held = self._held.hold(method, params, notification=False)
            if held is not None:
                return held
        return await self._judge_request(method, params)

    async def _judge(self, method: str, params: Any, notification: bool) -> Any:
        if notification:
            await self._judge_notification(method, params)
            return None
        return await self._judge_request(method, params)

    async def _judge_request(self, method: str, params: Any) -> Any:
        try:
            if self._stopping:
                raise shutting_down_error()
            # The gate first: an ungranted privileged method (model/info, inference/request
            # ...) is "capability denied" whether or not Switchboard implements it (§12, §5.4).
            self.gate_check(method)
            handler = self._handlers.get(method)
            if handler is None:
                raise method_not_found(method)
            return await handler(params)
        except RpcError as exc:
            self._refused(method, params, exc.code, exc.message, exc.data)
            raise
        except ValidationError as exc:
            self._refused(method, params, None, _first_error(exc), None)
            raise

    def _refused(self, method: str, params: Any, code: int | None, message: str, data: Any) -> None:
        """Count and log one whole request refused with an error answer."""
        fields: dict[str, Any] = {} if code is None else {"code": code}
        if isinstance(data, Mapping):
            fields.update({k: v for k, v in data.items() if k in ("capability", "featureSet")})
        if method == "push/event":
            self.refusals.refuse(PUSH_REFUSED, method, message, **fields)
        elif method in ("inference/request", "model/info"):
            if isinstance(data, Mapping) and isinstance(data.get("reason"), str):
                fields["reason_code"] = data["reason"]
            self.refusals.refuse(INFERENCE_REFUSED, method, message, **fields)
        elif method == "channels/incoming":
            raw = params.get("messages") if isinstance(params, Mapping) else None
            count = len(raw) if isinstance(raw, list) and raw else 1
            self.refusals.refuse(INCOMING_REFUSED, method, message, count=count, **fields)
        elif code == CapabilityDenied.CODE:
            self.refusals.refuse(CAPABILITY_DENIED, method, message, **fields)
        else:
            self.refusals.refuse(REQUEST_REFUSED, method, message, **fields)

    async def _on_notification(self, method: str, params: Any) -> None:
        if (
            method == "channels/changed"
            and self._must_hold(method)
            and self._held.hold(method, params, notification=True) is not None
        ):
            return
        await self._judge_notification(method, params)

    async def _judge_notification(self, method: str, params: Any) -> None:
        if method == "channels/changed":
            try:
                self.gate_check(method)
                answer = await self._registration.changed(params, notification=True)
            except CapabilityDenied as exc:
                self._refused(method, params, exc.code, exc.message, exc.data)
            except ValidationError as exc:
                self._refused(method, params, None, _first_error(exc), None)
            else:
                self._count_rejected(method, answer)
        elif method == "mcpl/manifestChanged":
            self.manifest_watch.announce(params)
        elif method == "notifications/tools/list_changed":
            self.tools.announce()
        elif method == "notifications/message":
            self.noted.note(("connector_log",), "connector_log", level="info", params=params)
        else:
            self.log.debug("notification_ignored", method=method)

    # -- handlers ----------------------------------------------------------------------------

    async def _ping(self, params: Any) -> dict[str, Any]:
        return {}

    async def _register(self, params: Any) -> dict[str, Any]:
        answer = await self._registration.register(params)
        self._count_rejected("channels/register", answer)
        return answer

    async def _changed_request(self, params: Any) -> dict[str, Any]:
        answer = await self._registration.changed_request(params)
        self._count_rejected("channels/changed", answer)
        return answer

    def _count_rejected(self, method: str, answer: Mapping[str, Any]) -> None:
        """Count and log the descriptors a register or changed answer refused: one call per
        reason, with the count and the first channel id (90,000 refused past a limit are one
        counted line, not 90,000). Results already written as JSON (every item accepted,
        see ``registration._all_accepted``) refuse nothing."""
        results = answer.get("results", ())
        if not isinstance(results, list):
            return
        per_reason: dict[str, tuple[int, Any]] = {}
        for item in results:
            if not item.get("accepted", True):
                reason = str(item.get("reason", "rejected"))
                count, first = per_reason.get(reason, (0, item.get("id")))
                per_reason[reason] = (count + 1, first)
        for reason, (count, first) in per_reason.items():
            self.refusals.refuse(DESCRIPTOR_REJECTED, method, reason, count=count, channel_id=first)

    def _log_handshake_timeout(self) -> None:
        """Say which handshake answer never came (the request then fails as it would)."""
        self.log.warning(
            "handshake_timed_out",
            waiting_for=self._waiting_for,
            seconds=self.config.request_timeout,
        )

    def _grant_allows(self, path: str) -> bool:
        """Whether the grant as it stands now allows ``path`` (it changes with the manifest)."""
        return self.grant.allows(path)

    def channel_permitted(self, channel_id: str) -> bool:
        """Per-channel narrowing from the config (``channels`` glob patterns)."""
        patterns = self._channel_patterns
        return patterns is None or any(fnmatchcase(channel_id, p) for p in patterns)

    async def _push_event(self, params: Any) -> Any:
        return await self._incoming.push_event(params, self._check_feature_set)

    def _check_feature_set(self, name: str, needs: str) -> None:
        manifest = self.manifest
        if manifest is None or name not in manifest.feature_sets:
            raise UnknownFeatureSet(name)
        if name not in self.enabled_feature_sets:
            raise FeatureSetNotEnabled(name)
        if needs not in manifest.feature_sets[name].uses:
            if self.compat_reason is not None and self.grant.allows(needs):
                # 0.4 rules (docs/compatibility.md): a granted capability is enough; 0.4 sets
                # did not declare what they push.
                return
            # Declaration mismatch (MCPL §6): the set does not declare what it uses.
            self.noted.note(
                ("feature_set_declaration_mismatch", name),
                "feature_set_declaration_mismatch",
                feature_set=name,
                needs=needs,
            )
            raise CapabilityDenied(needs)

    # -- outbound ----------------------------------------------------------------------------

    def ref(self, channel_id: str) -> ChannelRef:
        return ChannelRef(self.server_id, channel_id)

    def apply_declaration(self, declared: Any) -> bool:
        """Take the descriptor a ``channels/open`` answer returned (see
        :meth:`RegistrationHandler.apply_declaration`)."""
        return self._registration.apply_declaration(declared)


def _first_error(exc: ValidationError) -> str:
    """A short reason for a params model that did not validate."""
    errors = exc.errors()
    if not errors:
        return "invalid params"
    first = errors[0]
    where = ".".join(str(x) for x in first["loc"]) or "params"
    return f"invalid params: {where}: {first['msg']}"


def _policy_params(manifest: Manifest, grant: Grant, enabled: frozenset[str]) -> dict[str, Any]:
    """``featureSets/update`` params: the complete grant as explicit leaves, never a delta."""
    return {
        "effectiveCapabilities": sorted(grant.leaves()),
        "deniedCapabilities": sorted((manifest.advertised & CAPABILITY_PATHS) - grant.leaves()),
        "enabled": sorted(enabled),
        "disabled": sorted(set(manifest.feature_sets) - enabled),
    }
