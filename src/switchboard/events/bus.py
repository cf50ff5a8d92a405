"""The bus that carries host events: :class:`EventBus`.

Created once by the host and handed to the parts that emit. :meth:`EventBus.subscribe` adds a
listener, for every event or only for the classes it ``takes``; :meth:`EventBus.emit` calls
every listener of the event, in subscription order. A listener runs inside the emitter (often a
message handler in the peer's reader), so it **must not block** and must not await: work that
waits is started in a task group its owner keeps. A listener that raises is logged with the
event's type and skipped. Listeners subscribed while an event is delivered hear the next one.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from switchboard.events.kinds import HostEvent

__all__ = ["EventBus", "Listener"]

log = structlog.get_logger(__name__)

Listener = Callable[[HostEvent], None]
"""A host event listener: must not block, should not raise (see the module docstring)."""


class EventBus:
    """Delivers host events to listeners, in subscription order (see the module docstring)."""

    __slots__ = ("_listeners", "_routes")

    def __init__(self) -> None:
        self._listeners: tuple[tuple[Listener, tuple[type, ...] | None], ...] = ()
        # The listeners of each event class, worked out on its first emit: a listener that
        # takes a few kinds of event is not called for the traffic it ignores.
        self._routes: dict[type, tuple[Listener, ...]] = {}

    def subscribe(self, listener: Listener, *, takes: tuple[type, ...] | None = None) -> None:
        """Call ``listener`` for every event emitted from now on, after earlier listeners;
        with ``takes``, only for the events that are instances of those classes."""
        self._listeners = (*self._listeners, (listener, takes))
        self._routes = {}

    def _route(self, cls: type) -> tuple[Listener, ...]:
        route = tuple(
            listener
            for listener, takes in self._listeners
            if takes is None or issubclass(cls, takes)
        )
        self._routes[cls] = route
        return route

    def emit(self, event: HostEvent) -> None:
        """Tell every listener about ``event``; a listener that raises is logged and skipped."""
        route = self._routes.get(type(event))
        if route is None:
            route = self._route(type(event))
        for listener in route:
            try:
                listener(event)
            except Exception:
                log.exception(
                    "host_event_listener_failed",
                    event_type=type(event).__name__,
                    server_id=event.server_id,
                    listener=getattr(listener, "__qualname__", repr(listener)),
                )
