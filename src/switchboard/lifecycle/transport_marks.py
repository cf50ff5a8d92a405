"""What the host believes about each registration's transport: open, and the honest marks.

One :class:`~switchboard.lifecycle.rules.reconcile.TransportState` per *registration*, tied to
the entry it was learnt on, so a new registration of the same id starts clean
(channel-registry.md §2.3). Traffic on a channel is evidence that it is open; it repairs
transport status only, never the desired state.

What it deliberately does not know: desired state, requests, and when to send them.
"""

from __future__ import annotations

from collections.abc import Iterable

from switchboard.channels import ChannelEntry, ChannelRegistry
from switchboard.lifecycle.rules.reconcile import OPEN_STATE, TransportState

__all__ = ["TransportMarks", "may_be_open_at_start"]


def may_be_open_at_start(entry: ChannelEntry) -> bool:
    """A push placeholder, or a descriptor that opens itself, may be open before any open."""
    descriptor = entry.descriptor
    if getattr(descriptor, "initially_open", None) is True:
        return True
    metadata = descriptor.metadata
    return bool(metadata and metadata.get("lazyRegistered"))


_NONE: dict[str, tuple[ChannelEntry, TransportState]] = {}


class TransportMarks:
    """Transport states by registration, grouped by server so a server's go at once.

    What it knows: one :class:`~switchboard.lifecycle.rules.reconcile.TransportState` per
    *registration* (channel-registry.md §2.3). The state is tied to the
    :class:`~switchboard.channels.ChannelEntry` object it was learnt on, so a new registration of
    the same id (a reconnect, a ``changed.added``) starts clean, and an update in place keeps it. A
    registration with no state yet starts
    :meth:`~switchboard.lifecycle.rules.reconcile.TransportState.fresh`: closed, except that a push
    placeholder or a descriptor with ``initiallyOpen`` may already be open at the connector
    (``unconfirmed``), so a close is really sent for it. The registry's ``transport_open`` flag is
    kept equal to the state's ``open``, which is what ``channel_list`` shows.

    Traffic on a channel (an accepted ``channels/incoming``) is evidence that it is open: it marks
    the transport open and clears ``unconfirmed``/``failed_close``. It repairs transport status
    only, never the desired state.
    """

    __slots__ = ("_by_server", "_open", "_registry")

    def __init__(self, registry: ChannelRegistry) -> None:
        self._registry = registry
        self._by_server: dict[str, dict[str, tuple[ChannelEntry, TransportState]]] = {}
        # Per server: the registry's serial when it was read, and the ids whose current entry
        # has been learnt open with nothing to repair (see traffic).
        self._open: dict[str, tuple[int, set[str]]] = {}

    def get(self, entry: ChannelEntry) -> TransportState:
        """The state of this registration (fresh when nothing was learnt on it yet)."""
        server_id, channel_id = entry.ref
        held = self._by_server.get(server_id, _NONE).get(channel_id)
        if held is not None and held[0] is entry:
            return held[1]
        if entry.transport_open:
            return OPEN_STATE
        return TransportState.fresh(may_be_open=may_be_open_at_start(entry))

    def set(self, entry: ChannelEntry, state: TransportState) -> None:
        """Record ``state`` for this registration (ignored once it is no longer current)."""
        ref = entry.ref
        if self._registry.get(ref) is not entry:
            return
        server_id, channel_id = ref
        channels = self._by_server.get(server_id)
        if channels is None:
            channels = self._by_server[server_id] = {}
        channels[channel_id] = (entry, state)
        self._registry.set_transport_open(ref, state.open)
        known = self._open.get(server_id)
        if known is not None:
            known[1].discard(channel_id)  # traffic learns it again if it is open

    def traffic(self, server_id: str, channel_ids: Iterable[str]) -> None:
        """The server sent messages on these channels: they are open at the transport.

        Once per incoming batch: when every channel of the batch is among those
        learnt open with nothing to repair, and no channel got a new entry since (the
        registry's serial is unchanged), that is one C-level set check; otherwise a channel
        costs two dict lookups (its entry among the server's, and its learnt state)."""
        registry = self._registry
        serial = registry.serial
        known = self._open.get(server_id)
        if known is not None and known[0] == serial and known[1].issuperset(channel_ids):
            return
        channels = registry.server_channels(server_id)
        learnt = self._by_server.get(server_id, _NONE)
        settled: list[str] = []
        for channel_id in channel_ids:
            entry = channels.get(channel_id)
            if entry is None:
                continue
            held = learnt.get(channel_id)
            state = held[1] if held is not None and held[0] is entry else self.get(entry)
            if not state.open or state.unconfirmed or state.failed_close:
                self.set(entry, state.traffic())
                learnt = self._by_server.get(server_id, _NONE)
            # Open with nothing to repair now; it stays so until set() changes it (which
            # forgets it here) or a new entry takes the id (which moves the serial).
            settled.append(channel_id)
        if known is None or known[0] != serial:
            known = self._open[server_id] = (serial, set())
        known[1].update(settled)

    def drop_server(self, server_id: str) -> None:
        """Forget a server's registrations (its connection ended; they are gone)."""
        self._by_server.pop(server_id, None)
        self._open.pop(server_id, None)

    def __len__(self) -> int:
        """How many registrations have a learnt state."""
        return sum(len(channels) for channels in self._by_server.values())
