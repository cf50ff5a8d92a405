"""The channels a connector has registered with its host, and which of them are open.

What this module knows: the descriptors the host *accepted* (a rejected descriptor stays
unknown, so a later publish to it is answered ``-32023``; S-26), how to find one by id or by
its ``(type, address)`` as ``channels/open`` may name it (spec §14.3), and the open/closed
flag the host's lifecycle requests set. Every lookup is a dictionary lookup.

What it deliberately does not know: the wire, the grant, or what a channel is on the
platform. A registered channel counts as open until the host closes it; whether to stay
quiet on a closed channel is the connector's decision (the fleet's convention is to send
``channels/incoming`` only for open channels).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from switchboard.protocol import ChannelDescriptor

__all__ = ["ChannelTable", "address_key"]


def address_key(channel_type: str, address: Mapping[str, Any]) -> str:
    """A canonical key for ``(type, address)``: the address's JSON with sorted keys."""
    return channel_type + "\n" + json.dumps(address, sort_keys=True, separators=(",", ":"))


class ChannelTable:
    """Accepted descriptors by id, with an index by ``(type, address)`` kept in step."""

    __slots__ = ("_by_address", "_by_id", "_closed")

    def __init__(self) -> None:
        self._by_id: dict[str, ChannelDescriptor] = {}
        self._by_address: dict[str, str] = {}
        self._closed: set[str] = set()

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, channel_id: object) -> bool:
        return channel_id in self._by_id

    def __iter__(self) -> Iterator[ChannelDescriptor]:
        return iter(list(self._by_id.values()))

    def get(self, channel_id: str) -> ChannelDescriptor | None:
        """The descriptor with this id, or ``None``."""
        return self._by_id.get(channel_id)

    def find(self, channel_type: str, address: Mapping[str, Any]) -> ChannelDescriptor | None:
        """The descriptor registered with exactly this ``type`` and ``address``, or ``None``."""
        channel_id = self._by_address.get(address_key(channel_type, address))
        return None if channel_id is None else self._by_id.get(channel_id)

    def descriptors(self) -> list[ChannelDescriptor]:
        """Every accepted descriptor, in registration order."""
        return list(self._by_id.values())

    def is_open(self, channel_id: str) -> bool:
        """Whether the channel is known and not closed by the host."""
        return channel_id in self._by_id and channel_id not in self._closed

    def put(self, descriptor: ChannelDescriptor) -> None:
        """Add or replace a descriptor (replacing keeps its open/closed flag)."""
        previous = self._by_id.get(descriptor.id)
        if previous is not None and previous.address is not None:
            self._by_address.pop(address_key(previous.type, previous.address), None)
        self._by_id[descriptor.id] = descriptor
        if descriptor.address is not None:
            self._by_address[address_key(descriptor.type, descriptor.address)] = descriptor.id

    def remove(self, channel_id: str) -> ChannelDescriptor | None:
        """Forget a channel; returns what was removed, if anything."""
        descriptor = self._by_id.pop(channel_id, None)
        self._closed.discard(channel_id)
        if descriptor is not None and descriptor.address is not None:
            key = address_key(descriptor.type, descriptor.address)
            if self._by_address.get(key) == channel_id:
                del self._by_address[key]
        return descriptor

    def set_open(self, channel_id: str, is_open: bool) -> None:
        """Record the host's lifecycle decision for a known channel."""
        if is_open:
            self._closed.discard(channel_id)
        elif channel_id in self._by_id:
            self._closed.add(channel_id)

    def clear(self) -> None:
        """Forget everything (a new connection starts empty)."""
        self._by_id.clear()
        self._by_address.clear()
        self._closed.clear()
