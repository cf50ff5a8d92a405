"""The :class:`Connector`: subclass it to write an MCPL connector (server side) in Python.

It serves a host over a link (stdio by default) as a conforming server, becomes ready only once
its receipt for the host's policy Request is on the wire, then runs :meth:`Connector.on_ready`
in its own task; its outbound calls are checked against the grant and refused locally when it
does not allow them; hooks answer what the host asks.

What it deliberately does not know: any chat platform, or how JSON-RPC works underneath.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from switchboard.protocol import (
    METHOD_GATES,
    ChannelDescriptor,
    ContentBlock,
    IncomingItemResult,
    IncomingMessage,
    IncomingResult,
    ItemResult,
    ListResult,
    PushEventResult,
    RegisterResult,
    dump,
    read_error,
)
from switchboard.transport import Link, Peer, stdio_server_link

from .channels import ChannelTable
from .errors import ChannelNotRegistered, FeatureSetUnavailable, NotGranted, NotReady
from .hooks import ConnectorHooks
from .inbound import InboundHandlers
from .manifest import FeatureSetSpec, ServerManifest, build_manifest
from .messages import push_event_params
from .policy import PolicyChange, PolicyState
from .replies import AfterReply, ReplyHooks, ReplyWatch

__all__ = ["Connector", "ensure_stderr_logging"]

log = structlog.get_logger(__name__)


# model_validate hands a model instance back unchanged and validates a mapping.
_descriptor = ChannelDescriptor.model_validate


def _itemized(result: Any) -> list[ItemResult]:
    if isinstance(result, dict) and "results" not in result:
        return []  # a host may answer a pure removal with an empty object
    return list(RegisterResult.model_validate(result).results)


class Connector(ConnectorHooks):
    """An MCPL connector; subclass it and override the ``on_*`` hooks you need (:mod:`.hooks`).

    What it knows: the life of one connection as a connector sees it, and the connector's half of
    every MCPL 0.5 conversation (mcpl-protocol.md 1, 3.3-3.6, 4; S-xx):

    - serving a host over a :class:`~switchboard.transport.Link` (stdio by default), answering as a
      conforming server (see :mod:`.inbound`);
    - readiness: nothing privileged is sent before the host's ``featureSets/update`` Request has
      been answered *on the wire*; then :meth:`Connector.on_ready` runs in its own task (never
      inside the policy handler), the natural place to register channels;
    - self-limiting outbound calls (``channels/register``, ``channels/changed``,
      ``channels/incoming``, ``push/event``, ``channels/list``), checked against the same grant
      matcher the host uses and refused locally with :class:`~.errors.NotGranted`;
    - overridable async hooks for what the host asks (``on_publish``, ``on_open`` ...).

    Args:
        name: the ``serverInfo.name`` it reports.
        version: the ``serverInfo.version`` it reports.
        channels: the channel leaves it advertises: ``True`` (all seven), ``False``, or a
            mapping such as ``{"register": True, "publish": True, "incoming": True}``.
        push_events: whether it sends ``push/event``.
        feature_sets: its feature-set declarations by name.
        tools: whether it offers MCP tools (``list_tools`` / ``call_tool``).

    Raises:
        ValueError: the manifest would not conform (see :mod:`.manifest`).
    """

    request_timeout: float | None = 30.0
    """Seconds an outbound request waits for the host (``None``: forever)."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        channels: Mapping[str, bool] | bool = True,
        push_events: bool = False,
        feature_sets: Mapping[str, FeatureSetSpec | Mapping[str, Any]] | None = None,
        tools: bool = False,
    ) -> None:
        self.name = name
        self.version = version
        self.manifest: ServerManifest = build_manifest(
            channels=channels, push_events=push_events, feature_sets=feature_sets, tools=tools
        )
        self.policy = PolicyState(self.manifest)
        self.channels = ChannelTable()
        self.host_info: dict[str, Any] = {}
        self.host_advertisement: dict[str, Any] | None = None
        self.exit_code: int | None = None
        self.initialized = False  # the host sent notifications/initialized
        self._peer: Peer | None = None
        self._link: Link | None = None
        self._reply_hooks: ReplyHooks | None = None
        self._task_group: TaskGroup | None = None
        self._ready_event: anyio.Event | None = None
        self._on_ready_started = False
        # Bound loggers are built from the configuration in force now; stdout is the wire.
        ensure_stderr_logging()
        self._log = log.bind(connector=name)

    # -- state ---------------------------------------------------------------------------------

    @property
    def ready(self) -> anyio.Event:
        """Set once the host's policy Request has been answered on this connection."""
        if self._ready_event is None:
            self._ready_event = anyio.Event()
        return self._ready_event

    @property
    def is_ready(self) -> bool:
        """Whether the policy exchange has completed on the current connection."""
        return self.policy.ready

    @property
    def link(self) -> Link | None:
        """The link being served (unwrapped), or ``None`` when not serving."""
        return self._link

    def allows(self, path: str) -> bool:
        """Whether the capability ``path`` is advertised and granted right now."""
        return self.policy.allows(path)

    async def wait_ready(self) -> None:
        """Wait until the policy exchange has completed."""
        await self.ready.wait()

    # -- running -------------------------------------------------------------------------------

    async def serve(self, link: Link) -> None:
        """Serve one host over ``link`` until it ends or :meth:`stop` is called.

        Every connection starts from nothing: no grant, no channels, not ready. The link is
        closed on return.
        """
        if self._peer is not None:
            raise RuntimeError(f"connector {self.name!r} is already serving a link")
        self.policy.reset()
        self.channels.clear()
        self.initialized = False
        self._on_ready_started = False
        if self._ready_event is not None and self._ready_event.is_set():
            self._ready_event = anyio.Event()
        watch = ReplyWatch(link)
        replies = ReplyHooks(watch, self.start_soon)
        handlers = InboundHandlers(self, replies, self._commit)
        peer = Peer(
            watch,
            on_request=handlers.on_request,
            on_notification=handlers.on_notification,
            name=f"connector:{self.name}",
            default_timeout=self.request_timeout,
            read_error=read_error,
        )
        self._peer, self._link, self._reply_hooks = peer, link, replies
        self._log.info("connector_serving", link=link.description)
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                await peer.run()
                tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._peer = self._link = self._reply_hooks = None
            watch.forget()
            self.policy.reset()
            with anyio.CancelScope(shield=True):
                await link.aclose()
            self._log.info("connector_stopped", link=link.description)

    async def run_stdio(self) -> None:
        """Serve the host on this process's stdin/stdout (logs go to stderr)."""
        ensure_stderr_logging()
        async with stdio_server_link() as link:
            await self.serve(link)

    def main(self) -> None:
        """Run :meth:`run_stdio` to the end, then exit with :attr:`exit_code` if one was set."""
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(self.run_stdio)
        if self.exit_code is not None:
            sys.exit(self.exit_code)

    def stop(self, exit_code: int | None = None) -> None:
        """End :meth:`serve` now; :meth:`main` then exits with ``exit_code`` if given."""
        if exit_code is not None:
            self.exit_code = exit_code
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in this connection's task group (cancelled when it ends).

        A failure is logged and does not end the connection.
        """
        if self._task_group is None:
            raise RuntimeError("start_soon() needs a connection: call it while serving")
        self._task_group.start_soon(self._guarded, fn, *args)

    def after_reply(self, fn: AfterReply) -> None:
        """From inside a request hook: run ``fn()`` once that request's answer is on the wire.

        For a Notification (which has no answer) ``fn`` starts right after the hook.
        """
        replies = self._reply_hooks
        if replies is None or replies.current is None:
            raise RuntimeError("after_reply() can only be called from inside a hook")
        replies.current.append(fn)

    def stop_after_reply(self, exit_code: int | None = None) -> None:
        """From inside a request hook: stop serving once this request's answer is out."""

        async def stop() -> None:
            self.stop(exit_code)

        self.after_reply(stop)

    # -- outbound, self-limited ----------------------------------------------------------------

    def _check(self, method: str) -> Peer:
        gate = METHOD_GATES[method]
        peer = self._peer
        if peer is None or not self.policy.ready:
            raise NotReady(method, gate)
        if not self.policy.allows(gate):
            raise NotGranted(method, gate)
        return peer

    async def register(
        self, descriptors: Sequence[ChannelDescriptor | Mapping[str, Any]]
    ) -> list[ItemResult]:
        """Send ``channels/register``; the descriptors the host accepts become known channels.

        Returns:
            The host's itemized answer, one entry per descriptor.

        Raises:
            NotGranted: not ready, or ``channels.register`` not granted; nothing was sent.
            ValueError: duplicate ids in one call (pydantic errors for malformed ones).
            RpcError: the host refused the whole call.
        """
        peer = self._check("channels/register")
        items = [_descriptor(d) for d in descriptors]
        ids = [d.id for d in items]
        if len(set(ids)) != len(ids):
            raise ValueError("channel ids must be unique within one registration")
        result = await peer.request("channels/register", {"channels": [dump(d) for d in items]})
        answers = _itemized(result)
        self._keep_accepted(items, answers)
        return answers

    async def changed(
        self,
        added: Sequence[ChannelDescriptor | Mapping[str, Any]] = (),
        removed: Sequence[str] = (),
        updated: Sequence[ChannelDescriptor | Mapping[str, Any]] = (),
    ) -> list[ItemResult]:
        """Send ``channels/changed`` as a Request (S-27); removals apply locally at once.

        Returns:
            The host's itemized answer for the added and updated descriptors.
        """
        peer = self._check("channels/changed")
        add = [_descriptor(d) for d in added]
        update = [_descriptor(d) for d in updated]
        params: dict[str, Any] = {}
        if add:
            params["added"] = [dump(d) for d in add]
        if removed:
            params["removed"] = list(removed)
        if update:
            params["updated"] = [dump(d) for d in update]
        for channel_id in removed:  # a removal only narrows: stop using it before asking
            self.channels.remove(channel_id)
        answers = _itemized(await peer.request("channels/changed", params))
        self._keep_accepted([*add, *update], answers)
        return answers

    async def send_incoming(
        self, messages: Sequence[IncomingMessage | Mapping[str, Any]]
    ) -> list[IncomingItemResult]:
        """Send ``channels/incoming`` (always a Request, S-28) for registered channels.

        Raises:
            NotGranted: not ready, or ``channels.incoming`` not granted.
            ChannelNotRegistered: a message names a channel the host has not accepted.
        """
        peer = self._check("channels/incoming")
        batch = [IncomingMessage.model_validate(m) for m in messages]
        for message in batch:
            if message.channel_id not in self.channels:
                raise ChannelNotRegistered(message.channel_id)
        result = await peer.request("channels/incoming", {"messages": [dump(m) for m in batch]})
        return list(IncomingResult.model_validate(result).results)

    async def push_event(
        self,
        feature_set: str,
        content: Sequence[ContentBlock | Mapping[str, Any]] | str,
        *,
        event_id: str | None = None,
        timestamp: str | None = None,
        origin: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
    ) -> PushEventResult:
        """Send ``push/event`` tagged with an enabled feature set that uses ``pushEvents``.

        Raises:
            NotGranted: not ready or ``pushEvents`` not granted.
            FeatureSetUnavailable: the set is unknown, not enabled, or does not list
                ``pushEvents`` in its ``uses`` (a declaration mismatch, S-02).
        """
        peer = self._check("push/event")
        reason = self.policy.feature_set_status(feature_set)
        if reason is None and "pushEvents" not in self.manifest.feature_sets[feature_set].uses:
            reason = "declaration_mismatch"
        if reason is not None:
            raise FeatureSetUnavailable("push/event", "pushEvents", feature_set, reason)
        params = push_event_params(
            feature_set, content, event_id=event_id, timestamp=timestamp, origin=origin, tags=tags
        )
        return PushEventResult.model_validate(await peer.request("push/event", dump(params)))

    async def list_host_channels(self) -> list[ChannelDescriptor]:
        """Ask the host which of this connection's channels it knows (``channels/list``)."""
        peer = self._check("channels/list")
        return list(ListResult.model_validate(await peer.request("channels/list", {})).channels)

    def _keep_accepted(self, sent: list[ChannelDescriptor], answers: list[ItemResult]) -> None:
        accepted = {answer.id for answer in answers if answer.accepted}
        for descriptor in sent:
            if descriptor.id in accepted:
                self.channels.put(descriptor)
            else:
                self._log.info("channel_not_accepted", channel=descriptor.id)

    # -- what the inbound handlers report ------------------------------------------------------

    def _commit(self, change: PolicyChange) -> None:
        if not self.policy.commit(change):
            return
        self.ready.set()
        if not self._on_ready_started:
            self._on_ready_started = True
            self.start_soon(self.on_ready)

    async def _guarded(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        try:
            await fn(*args)
        except Exception:
            self._log.exception("connector_task_failed", task=getattr(fn, "__name__", repr(fn)))


def ensure_stderr_logging() -> None:
    """Send structlog output to stderr unless the application configured it already.

    structlog's default logger prints to stdout, which is the wire of a stdio connector.
    """
    if not structlog.is_configured():
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
