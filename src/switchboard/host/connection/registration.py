"""``channels/register``, ``channels/changed`` and ``channels/list`` for one connection.

What this module knows (MCPL §14.5; mcpl-protocol.md 4.3-4.5): each descriptor is validated
and authorized on its own, against the grant as it stands when the message arrives and the
configured per-channel narrowing, and the answer has one result per submitted item; a
``channels/changed`` Notification cannot carry results, so what it filters out is logged item
by item; ``channels/list`` answers with this connection's accepted channels only. A new
channel past the connection's :class:`~switchboard.host.connection.limits.RegistrationLimits`
(``max_channels``, ``max_registrations_per_second``) is refused item by item with the reason.

What it deliberately does not know: the method gate (the session checks it before calling in),
readiness, or what happens to a channel after it is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import structlog

from switchboard.channels import ChannelRef, ChannelRegistry, DescriptorLike, Rejected
from switchboard.gcpause import gc_paused
from switchboard.host.connection.limits import RegistrationBudget, RegistrationLimits
from switchboard.host.events import ChannelsChanged, ChannelsRegistered, EventBus
from switchboard.protocol import ChangedParams, RegisterParams, validate_descriptors
from switchboard.protocol.messages import ChannelDescriptor, DescriptorProblem

__all__ = ["RegistrationHandler"]

log = structlog.get_logger(__name__)

_DENIED = "capability_denied"


class RegistrationHandler:
    """Registers, updates and lists one connector's channels.

    Args:
        server_id: the connection's server id.
        registry: where channels are kept.
        events: where :class:`ChannelsRegistered` and :class:`ChannelsChanged` are emitted.
        allows: whether the grant in force allows a capability path, asked per descriptor.
        permits: the per-channel narrowing of the config.
        limits: the cap on channels and the rate of new registrations; None for neither.
    """

    def __init__(
        self,
        *,
        server_id: str,
        registry: ChannelRegistry,
        events: EventBus,
        allows: Callable[[str], bool],
        permits: Callable[[str], bool],
        limits: RegistrationLimits | None = None,
    ) -> None:
        self._limits = limits
        self._server_id = server_id
        self._registry = registry
        self._events = events
        self._allows = allows
        self._permits = permits
        self._log = log.bind(server_id=server_id)

    def _authorize(self, descriptor: DescriptorLike) -> str | None:
        if not self._allows("channels.register"):
            return _DENIED
        if not self._permits(descriptor.id):
            return _DENIED
        return None

    def _limited(self) -> tuple[Callable[[DescriptorLike], str | None], RegistrationBudget | None]:
        """The authorizer of one request: :meth:`_authorize`, then, for a channel this
        connection has not registered yet, a place within the limits."""
        limits = self._limits
        if limits is None:
            return self._authorize, None
        server_id, registry, base = self._server_id, self._registry, self._authorize
        budget = limits.budget(partial(registry.server_size, server_id))
        admit = budget.admit

        def authorize(descriptor: DescriptorLike) -> str | None:
            reason = base(descriptor)
            if reason is not None or registry.get(ChannelRef(server_id, descriptor.id)):
                return reason  # refused already, or an update: it takes no new place
            return admit()

        return authorize, budget

    @staticmethod
    def _items(raw: list[Any]) -> list[ChannelDescriptor | Rejected]:
        items: list[ChannelDescriptor | Rejected] = []
        for v in validate_descriptors(raw):
            if isinstance(v, DescriptorProblem):
                items.append(Rejected(v.id, v.reason))
            else:
                items.append(v)
        return items

    async def register(self, params: Any) -> dict[str, Any]:
        p = RegisterParams.model_validate(params)
        # One pause over validation, registry and answer of a large request: they allocate
        # long-lived objects that a collection would only walk and promote (issue #14).
        with gc_paused(len(p.channels) >= _GC_PAUSE_MIN_ITEMS):
            authorize, budget = self._limited()
            change = self._registry.register(
                self._server_id, self._items(p.channels), authorize=authorize
            )
            if budget is not None:
                budget.finish()
            results = [_item(r) for r in change.results]
        self._events.emit(
            ChannelsRegistered(self._server_id, tuple(r.channel_id for r in change.added))
        )
        return {"results": results}

    async def changed_request(self, params: Any) -> dict[str, Any]:
        return await self.changed(params, notification=False)

    async def changed(self, params: Any, *, notification: bool) -> dict[str, Any]:
        p = ChangedParams.model_validate(params)
        removed = p.removed or []  # itemized one by one: a number or a bad item fails alone
        authorize, budget = self._limited()
        change = self._registry.change(
            self._server_id,
            added=self._items(p.added or []),
            removed=removed,
            updated=self._items(p.updated or []),
            authorize=authorize,
        )
        if budget is not None:
            budget.finish()
        results = [_item(r) for r in change.results]
        for result, raw in zip(results, removed, strict=False):
            if type(raw) is not str:  # answered with its id as sent (T53): 123, not "123"
                result["id"] = raw
        if notification:
            for r in change.results:
                if not r.accepted:
                    # The session counts it and logs it rate-limited (connector_refused).
                    self._log.debug(
                        "changed_item_filtered",
                        channel_id=r.id,
                        reason=r.reason,
                        form="notification",
                    )
        self._events.emit(
            ChannelsChanged(
                self._server_id,
                tuple(r.channel_id for r in change.added),
                tuple(r.channel_id for r in change.removed),
            )
        )
        return {"results": results}

    def apply_declaration(self, declared: Any) -> bool:
        """Apply the descriptor a ``channels/open`` answer returned for one of this
        connection's channels (channel-registry.md §5.6): validated and authorized like an
        update in ``channels/changed``. A bad or unauthorized declaration changes nothing.

        Returns:
            Whether the registration took the declaration.
        """
        change = self._registry.change(
            self._server_id, updated=self._items([declared]), authorize=self._authorize
        )
        taken = bool(change.updated)
        if not taken:
            self._log.info(
                "open_declaration_ignored",
                reason=change.results[0].reason if change.results else None,
            )
        return taken

    async def list(self, params: Any) -> dict[str, Any]:
        entries = self._registry.server_entries(self._server_id)
        return {"channels": [_descriptor_wire(e.descriptor) for e in entries]}


_GC_PAUSE_MIN_ITEMS = 1000


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
