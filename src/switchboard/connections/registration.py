"""``channels/register``, ``channels/changed`` and ``channels/list`` for one connection.

What this module knows (MCPL §14.5; mcpl-protocol.md 4.3-4.5): each descriptor is validated
and authorized on its own, against the grant as it stands when the message arrives and the
configured per-channel narrowing, and the answer has one result per submitted item; a
``channels/changed`` Notification cannot carry results, so what it filters out is logged item
by item; ``channels/list`` answers with this connection's accepted channels only. A new
channel past the connection's :class:`~switchboard.connections.limits.RegistrationLimits`
(``max_channels``, ``max_registrations_per_second``) is refused item by item with the reason.

What it deliberately does not know: the method gate (the session checks it before calling in),
readiness, or what happens to a channel after it is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import attrgetter
from typing import Any

import orjson
import structlog

from switchboard.channels import (
    AllAccepted,
    Authorizer,
    BatchAuthorizer,
    ChannelRegistry,
    CheckedDescriptors,
    DescriptorLike,
    ItemResult,
    Rejected,
)
from switchboard.connections.limits import RegistrationBudget, RegistrationLimits
from switchboard.events import ChannelsChanged, ChannelsRegistered, EventBus
from switchboard.protocol import (
    ChangedParams,
    RegisterParams,
    accepted_results,
    fast_descriptors,
    validate_descriptors,
)
from switchboard.protocol.messages import DescriptorProblem
from switchboard.runtime.gcpause import pause_collector
from switchboard.runtime.ratelog import RateLimitedLog

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
        permits: the per-channel narrowing of the config; None when there is none.
        limits: the cap on channels and the rate of new registrations; None for neither.
        after_answer: runs a function once the answer being returned has left the host
            (the session's); None runs it at once.
    """

    def __init__(
        self,
        *,
        server_id: str,
        registry: ChannelRegistry,
        events: EventBus,
        allows: Callable[[str], bool],
        permits: Callable[[str], bool] | None,
        limits: RegistrationLimits | None = None,
        after_answer: Callable[[Callable[[], None]], None] | None = None,
        noted: RateLimitedLog | None = None,
    ) -> None:
        self._limits = limits
        self._after_answer = after_answer or _call
        self._server_id = server_id
        self._registry = registry
        self._events = events
        self._allows = allows
        self._permits = permits
        self._log = log.bind(server_id=server_id)
        # What a connector may repeat (a declaration an open answer carried that is not taken).
        self._noted = noted if noted is not None else RateLimitedLog(self._log)

    def _authorize(self, descriptor: DescriptorLike) -> str | None:
        if not self._allows("channels.register"):
            return _DENIED
        permits = self._permits
        if permits is not None and not permits(descriptor.id):
            return _DENIED
        return None

    def _deciders(
        self,
    ) -> tuple[Authorizer | None, BatchAuthorizer | None, RegistrationBudget | None]:
        """How one request is decided: the per-descriptor authorizer of its updates
        (:meth:`_authorize`: an update takes no new place), the batch authorizer of its new
        registrations (:meth:`_authorize`, then, for a channel this connection has not
        registered yet, a place within the limits, in order), and the budget to finish.

        The grant is read once, here: a request is decided against the grant as it stands
        when it arrives, and nothing can change it while the registry calls back (the calls
        are synchronous). None for an authorizer means "every valid descriptor is accepted".
        """
        if not self._allows("channels.register"):
            return _deny, _deny_batch, None
        permits, limits = self._permits, self._limits
        one: Authorizer | None = None
        if permits is not None:
            one = partial(_permitted, permits)
        if limits is None:
            if permits is None:
                return None, None, None
            return one, None, None
        server_id, registry = self._server_id, self._registry
        budget = limits.budget(partial(registry.server_size, server_id))

        def batch(descriptors: Sequence[DescriptorLike]) -> Sequence[str | None] | None:
            n = len(descriptors)
            reasons: list[str | None] | None = None
            if permits is not None:
                reasons = [None if permits(d.id) else _DENIED for d in descriptors]
                if _DENIED not in reasons:
                    reasons = None
            # This connection's channels as they stand now (after the removals of a
            # channels/changed): an id among them is an update, and takes no new place.
            known = registry.server_channels(server_id)
            if reasons is None and (not known or known.keys().isdisjoint(map(_id, descriptors))):
                taken, why = budget.admit_many(n)
                return None if why is None else [None] * taken + [why] * (n - taken)
            fresh = [
                i
                for i, d in enumerate(descriptors)
                if (reasons is None or reasons[i] is None) and d.id not in known
            ]
            taken, why = budget.admit_many(len(fresh))
            if why is None:
                return reasons
            if reasons is None:
                reasons = [None] * n
            for i in fresh[taken:]:
                reasons[i] = why
            return reasons

        return one, batch, budget

    @staticmethod
    def _items(raw: list[Any]) -> Sequence[DescriptorLike | Rejected]:
        """Each item as a descriptor, or :class:`Rejected` with the model's reason: the
        common shape through :func:`fast_descriptors`, every other item through the model."""
        if not isinstance(raw, list):
            raise TypeError(f"expected a list, got {type(raw).__name__}")
        fast, odd = fast_descriptors(raw)
        if not odd:  # every item took the common shape, which is what the registry would check
            return CheckedDescriptors(fast)  # type: ignore[arg-type]  # no None without odd
        items: list[DescriptorLike | Rejected | None] = list(fast)
        for n, v in zip(odd, validate_descriptors([raw[n] for n in odd]), strict=True):
            items[n] = Rejected(v.id, v.reason) if isinstance(v, DescriptorProblem) else v
        return items  # type: ignore[return-value]  # every None was replaced

    async def register(self, params: Any) -> dict[str, Any]:
        channels = _register_channels(params)
        # One pause over validation, registry and answer of a large request: they allocate
        # long-lived objects that a collection would only walk and promote. It
        # ends once the answer has left (``after_answer``): the collection then owed runs
        # while the connector reads the answer, not before it is written.
        resume = pause_collector() if len(channels) >= _GC_PAUSE_MIN_ITEMS else None
        try:
            authorize, batch, budget = self._deciders()
            change = self._registry.register(
                self._server_id,
                self._items(channels),
                authorize=authorize,
                authorize_batch=batch,
            )
            if budget is not None:
                budget.finish()
            outcome = change.results
            results = (
                _all_accepted(outcome.accepted_ids)
                if isinstance(outcome, AllAccepted)
                else _wire_results(outcome)
            )
            added = change.added_ids
            del outcome
            # Freed while the collector is off, the per-item results never reach a collection.
            del change
        except BaseException:
            if resume is not None:
                resume()
            raise
        if resume is not None:
            registry = self._registry

            def after_answer() -> None:
                # The labels the registry left for after the answer, while the collector is
                # still off (their keys are long-lived), then the collection owed.
                try:
                    registry.index_labels()
                finally:
                    resume()

            self._after_answer(after_answer)
        self._events.emit(ChannelsRegistered(self._server_id, added))
        return {"results": results}

    async def changed_request(self, params: Any) -> dict[str, Any]:
        return await self.changed(params, notification=False)

    async def changed(self, params: Any, *, notification: bool) -> dict[str, Any]:
        p = ChangedParams.model_validate(params)
        removed = p.removed or []  # itemized one by one: a number or a bad item fails alone
        authorize, batch, budget = self._deciders()
        change = self._registry.change(
            self._server_id,
            added=self._items(p.added or []),
            removed=removed,
            updated=self._items(p.updated or []),
            authorize=authorize,
            authorize_batch=batch,
        )
        if budget is not None:
            budget.finish()
        results = _wire_results(change.results)
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
                change.added_ids,
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
            self._noted.note(
                ("open_declaration_ignored",),
                "open_declaration_ignored",
                level="info",
                reason=change.results[0].reason if change.results else None,
            )
        return taken

    async def list(self, params: Any) -> dict[str, Any]:
        entries = self._registry.server_entries(self._server_id)
        return {"channels": [_descriptor_wire(e.descriptor) for e in entries]}


_GC_PAUSE_MIN_ITEMS = 1000


def _call(function: Callable[[], None]) -> None:
    function()


_id = attrgetter("id")


def _deny(descriptor: DescriptorLike) -> str | None:
    return _DENIED


def _deny_batch(descriptors: Sequence[DescriptorLike]) -> Sequence[str | None]:
    return [_DENIED] * len(descriptors)


def _permitted(permits: Callable[[str], bool], descriptor: DescriptorLike) -> str | None:
    return None if permits(descriptor.id) else _DENIED


def _register_channels(params: Any) -> list[Any]:
    """The ``channels`` of ``channels/register`` params: read straight from the common shape
    (a JSON object whose ``channels`` is a list), else through :class:`RegisterParams`, which
    accepts exactly that too (its extra members allowed) and says what is wrong otherwise."""
    if type(params) is dict:
        channels = params.get("channels")
        if type(channels) is list:
            return channels
    return RegisterParams.model_validate(params).channels


def _wire_results(results: Sequence[ItemResult]) -> list[dict[str, Any]]:
    """The wire form of each result: ``{id, accepted}``, and ``reason`` when there is one."""
    if isinstance(results, AllAccepted):  # every item accepted: built from the ids alone
        return [{"id": item_id, "accepted": True} for item_id in results.accepted_ids]
    return [
        {"id": item_id, "accepted": accepted}
        if reason is None
        else {"id": item_id, "accepted": accepted, "reason": reason}
        for item_id, accepted, reason in results
    ]


def _all_accepted(ids: Sequence[str]) -> list[dict[str, Any]] | orjson.Fragment:
    """The results of a batch whose every item was accepted, as JSON written once.

    Building 100,000 ``{"id", "accepted"}`` dicts only for orjson to write them cost a tenth
    of a 100,000-channel registration, and the cyclic collector then walked them:
    see :func:`~switchboard.protocol.accepted_results`. Ids it cannot cut apart get
    the dicts as before (written the same way).
    """
    written = accepted_results(ids, "id")
    if written is not None:
        return written
    return [{"id": item_id, "accepted": True} for item_id in ids]


def _descriptor_wire(descriptor: Any) -> dict[str, Any]:
    dump = getattr(descriptor, "model_dump", None)
    if dump is not None:
        result: dict[str, Any] = dump(by_alias=True, exclude_none=True)
        return result
    return dict(descriptor)
