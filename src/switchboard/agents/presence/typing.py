"""Typing indicators: started now, refreshed every 7 s, stopped only where a start went.

:class:`TypingKeeper` keeps each indicator an agent (or its turn) started up until it runs out
of refreshes, its words land, or it is stopped (channel-registry.md §10.1). Why a stop goes only
where a start went: a connector that never showed typing is never sent a stray stop.

What it deliberately does not know: MCP, agents' turns beyond the channel they give, and the
rest of the host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import anyio
import anyio.abc
import structlog

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.connections.owner import Owners, ready_for
from switchboard.events import (
    ChannelsChanged,
    ChannelsRemoved,
    ConnectorExited,
    HostEvent,
    Published,
)
from switchboard.refusals.outcome import PublishStatus
from switchboard.transport import TransportError

__all__ = ["AUTO_TYPING_REFRESHES", "TYPING_INTERVAL", "Sleep", "TypingKeeper"]

log = structlog.get_logger(__name__)

TYPING_INTERVAL = 7.0
"""Seconds between refreshes of a typing indicator."""

AUTO_TYPING_REFRESHES = 8
"""Refreshes automatic typing gets (about a minute) before it stops by itself."""

Sleep = Callable[[float], Awaitable[None]]
"""How the refresh timer waits: ``anyio.sleep`` in production, a stepped fake in tests."""

Op = Literal["start", "stop"]


@dataclass(slots=True, eq=False)
class _Typing:
    """One channel's running indicator (identity matters: a restart is a new object)."""

    scope: anyio.CancelScope
    refreshes: int | None  # refreshes left; None: until stopped
    auto_for: str | None = None  # the agent whose turn started it automatically
    announced: bool = False  # a start went out, so a stop may follow


class TypingKeeper:
    """Runs the typing indicators of every channel.

    What it knows (channel-registry.md §10.1, mcpl-protocol.md 4.10):

    - **The message.** ``channels/typing`` as a Notification ``{channelId, op, typing, metadata?}``
      with ``op`` ``"start"`` or ``"stop"`` and ``typing`` ``true`` or ``false`` to match: the spec
      gives only the gate, most of the fleet reads ``op``, and a matrix connector reads ``typing``
      (anything but ``false`` is "on" there), so both go out. It goes out only while the server is
      ready and its grant holds ``channels.typing``; without the grant a start is skipped silently
      (it would fire every 7 s) and the refresh timer keeps running, so a grant that arrives later
      is used at the next tick.
    - **Where.** :meth:`TypingKeeper.start` takes a ref (that channel only) or a string, which fans
      out to every channel ``entries_named`` returns: typing posts nothing, so a bare id that two
      servers register shows typing in both rather than in neither. An unregistered ref is a no-op
      that stores no metadata.
    - **When.** A start sends at once, then one refresh per interval (7 s; Discord's indicator lasts
      about 10 s), each reading the latest metadata. A start on a channel already typing sends one
      immediate refresh only if it brings metadata that differs. A start may carry a budget of
      refreshes: when it runs out, typing stops as if :meth:`TypingKeeper.stop` had been called (the
      tools use this so an agent that never speaks does not type forever).
    - **Stops.** A stop goes only where a start actually went out, and only with the grant: the
      reference sends stops without checking ``channels.typing``, but MCPL forbids any H→S message
      without its gate (H-45), and a server that never saw a start needs no stop. A stop always
      drops the channel's metadata.
    - **Removal.** A channel removed (by ``channels/changed``, or by the host when a manifest change
      revoked registration) or a server that went away ends its typing with no stop (the channel is
      gone); a refresh tick that finds its channel unregistered ends the same way. Speech published
      into a channel ends its typing with a stop (:meth:`TypingKeeper.observe` follows these host
      events).
    - **Automatic typing** for agents: :meth:`TypingKeeper.turn_began` starts typing in the turn's
      locus with a budget and ends the agent's previous automatic typing.

    Timers run as one task per channel in the task group of :meth:`TypingKeeper.run` (the host runs
    it); the interval and the sleep function are injectable so tests step time instead of waiting.
    What it deliberately does not know: turns and loci (the caller passes the locus), channel
    lifecycle, and how speech is routed.

    Subscribe :meth:`observe` to the host's event bus and run :meth:`run` in the host's task
    group. Without :meth:`run`, a start still goes out once but is not refreshed.

    Attributes:
        interval: Seconds between refreshes.
        sleep: The timer's sleep function; replace it before :meth:`run` to step time.
    """

    __slots__ = (
        "_auto",
        "_metadata",
        "_owners",
        "_registry",
        "_tg",
        "_typing",
        "interval",
        "sleep",
    )

    def __init__(
        self,
        registry: ChannelRegistry,
        owners: Owners,
        *,
        interval: float = TYPING_INTERVAL,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self._registry = registry
        self._owners = owners
        self.interval = interval
        self.sleep = sleep
        self._typing: dict[ChannelRef, _Typing] = {}
        self._metadata: dict[ChannelRef, dict[str, Any]] = {}
        self._auto: dict[str, ChannelRef] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # -- running -------------------------------------------------------------------------

    async def run(self) -> None:
        """Own the refresh timers until cancelled; on exit every timer and metadata is gone."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await anyio.sleep_forever()
        finally:
            self._tg = None
            self._typing.clear()
            self._metadata.clear()
            self._auto.clear()

    @property
    def running(self) -> bool:
        """Whether :meth:`run` is serving (refreshes happen)."""
        return self._tg is not None

    def typing_in(self) -> frozenset[ChannelRef]:
        """The channels typing now."""
        return frozenset(self._typing)

    def metadata_of(self, ref: ChannelRef) -> Mapping[str, Any] | None:
        """The routing metadata stored for ``ref``, if any."""
        return self._metadata.get(ref)

    # -- start / stop --------------------------------------------------------------------

    async def start(
        self,
        channel: str | ChannelRef,
        metadata: Mapping[str, Any] | None = None,
        *,
        refreshes: int | None = None,
    ) -> tuple[ChannelRef, ...]:
        """Type in ``channel`` now and keep it up until stopped.

        Args:
            channel: A ref (that channel only) or a name (every channel ``entries_named``
                returns for it).
            metadata: Routing metadata sent with every start; new metadata that differs from
                the stored one refreshes a running indicator at once.
            refreshes: How many refreshes before typing stops by itself (None: no limit). On
                a channel already typing this replaces the remaining budget.

        Returns:
            The registered channels typing now because of this call.
        """
        typing: list[ChannelRef] = []
        for ref in self._refs(channel):
            if self._registry.get(ref) is None:
                continue
            changed = metadata is not None and metadata != self._metadata.get(ref)
            if metadata is not None:
                self._metadata[ref] = dict(metadata)
            typing.append(ref)
            state = self._typing.get(ref)
            if state is not None:
                state.refreshes = refreshes
                state.auto_for = None
                if changed:
                    await self._announce(ref, state)
                continue
            state = _Typing(anyio.CancelScope(), refreshes)
            self._typing[ref] = state
            if self._tg is not None:
                self._tg.start_soon(self._keep, ref, state)
            else:
                log.warning("typing_not_refreshed", reason="the typing keeper is not running")
            await self._announce(ref, state)
        return tuple(typing)

    async def stop(self, channel: str | ChannelRef | None = None) -> tuple[ChannelRef, ...]:
        """Stop typing in ``channel`` (a ref, or a name fanned out), or everywhere.

        A stop notification goes only to channels where a start went out and that are still
        registered; the metadata of every channel named is dropped either way.

        Returns:
            The channels whose typing this ended.
        """
        refs = list(self._typing) if channel is None else self._refs(channel)
        ended: list[ChannelRef] = []
        for ref in refs:
            state = self._typing.pop(ref, None)
            metadata = self._metadata.pop(ref, None)
            if state is None:
                continue
            state.scope.cancel()
            ended.append(ref)
            if state.announced and self._registry.get(ref) is not None:
                await self._send(ref, "stop", metadata)
        if channel is None:
            self._metadata.clear()
            self._auto.clear()
        return tuple(ended)

    def stop_soon(self, ref: ChannelRef) -> bool:
        """:meth:`stop` for one ref, callable from synchronous code (host event listeners).

        The timer ends at once; the stop notification is sent from the keeper's task group.

        Returns:
            Whether ``ref`` was typing.
        """
        state = self._typing.pop(ref, None)
        metadata = self._metadata.pop(ref, None)
        if state is None:
            return False
        state.scope.cancel()
        if state.announced and self._tg is not None:
            self._tg.start_soon(self._send, ref, "stop", metadata)
        return True

    def forget(self, ref: ChannelRef) -> None:
        """End typing in a channel that is gone: no stop is sent (there is nothing to stop)."""
        state = self._typing.pop(ref, None)
        self._metadata.pop(ref, None)
        if state is not None:
            state.scope.cancel()

    # -- automatic typing ----------------------------------------------------------------

    async def turn_began(
        self, agent: str, locus: ChannelRef | None, *, refreshes: int = AUTO_TYPING_REFRESHES
    ) -> bool:
        """A turn of ``agent`` began: end its previous automatic typing, type in ``locus``.

        Nothing starts when the locus is None, unregistered or inbound-only (the agent cannot
        speak there), or when the agent already types there by its own choice.

        Returns:
            Whether automatic typing started.
        """
        previous = self._auto.pop(agent, None)
        if previous is not None and previous != locus:
            state = self._typing.get(previous)
            if state is not None and state.auto_for == agent:
                await self.stop(previous)
        if locus is None:
            return False
        entry = self._registry.get(locus)
        if entry is None or entry.descriptor.direction == "inbound":
            return False
        current = self._typing.get(locus)
        if current is not None and current.auto_for is None:
            return False
        await self.start(locus, refreshes=refreshes)
        state = self._typing.get(locus)
        if state is None:
            return False
        state.auto_for = agent
        self._auto[agent] = locus
        return True

    # -- host events ---------------------------------------------------------------------

    #: The events :meth:`observe` takes (it subscribes to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (
        ChannelsChanged,
        ChannelsRemoved,
        ConnectorExited,
        Published,
    )

    def observe(self, event: HostEvent) -> None:
        """A host event listener: removals end typing silently; speech published ends it with
        a stop."""
        if type(event) is Published:  # once per publish: before the match
            # Nothing typing (the common case): no ref to build.
            if (
                self._typing or self._metadata
            ) and event.outcome.status is not PublishStatus.FAILED:
                self.stop_soon(ChannelRef(event.server_id, event.channel_id))
            return
        match event:
            case (
                ChannelsChanged(server_id=server_id, removed=removed)
                | ChannelsRemoved(server_id=server_id, channel_ids=removed)
            ):
                for channel_id in removed:
                    self.forget(ChannelRef(server_id, channel_id))
            case ConnectorExited(server_id=server_id):
                for ref in [r for r in self._typing if r.server_id == server_id]:
                    self.forget(ref)

    # -- internals -----------------------------------------------------------------------

    def _refs(self, channel: str | ChannelRef) -> list[ChannelRef]:
        if isinstance(channel, ChannelRef):
            return [channel]
        return [entry.ref for entry in self._registry.names.entries_named(channel)]

    async def _keep(self, ref: ChannelRef, state: _Typing) -> None:
        with state.scope:
            while True:
                await self.sleep(self.interval)
                if self._typing.get(ref) is not state:
                    return
                if self._registry.get(ref) is None:
                    self.forget(ref)
                    return
                if state.refreshes is not None:
                    if state.refreshes <= 0:
                        break
                    state.refreshes -= 1
                await self._announce(ref, state)
        if self._typing.get(ref) is state:  # the budget ran out
            self._typing.pop(ref)
            metadata = self._metadata.pop(ref, None)
            if state.auto_for is not None and self._auto.get(state.auto_for) == ref:
                del self._auto[state.auto_for]
            if state.announced:
                await self._send(ref, "stop", metadata)

    async def _announce(self, ref: ChannelRef, state: _Typing) -> None:
        if await self._send(ref, "start", self._metadata.get(ref)):
            state.announced = True

    async def _send(self, ref: ChannelRef, op: Op, metadata: Mapping[str, Any] | None) -> bool:
        owner = self._owners.get(ref.server_id)
        if owner is None or not ready_for(owner, "channels.typing"):
            return False
        params: dict[str, Any] = {"channelId": ref.channel_id, "op": op, "typing": op == "start"}
        if metadata:
            params["metadata"] = dict(metadata)
        try:
            await owner.typing(params)
        except TransportError as exc:
            log.info(
                "typing_not_sent",
                server_id=ref.server_id,
                channel_id=ref.channel_id,
                op=op,
                error=str(exc),
            )
            return False
        return True
