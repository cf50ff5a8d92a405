"""The channels of connectors owned by other instances, kept in the local registry.

An agent names channels through its own instance's registry, whoever runs the connector.
The owner answers a ``channels`` request with the descriptors it holds, and announces
``inval.channels:<server>`` whenever its registrations change; every other instance then
fetches them again (also whenever the connector's owner changes). Only the router hears of
such a change here: the lifecycle of a channel is its owner's business, so no registration
event is emitted for a replica. Before this instance starts a connector it drops the
replica, so the connector's own registration replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog
from pydantic import TypeAdapter, ValidationError

from switchboard.channels import ChannelRegistry
from switchboard.cluster.rpc import RemoteOwner
from switchboard.protocol.channel_messages import ChannelDescriptor
from switchboard.transport.errors import TransportError

__all__ = ["ChannelReplica", "descriptor_dict"]

log = structlog.get_logger(__name__)

_DESCRIPTORS: TypeAdapter[list[ChannelDescriptor]] = TypeAdapter(list[ChannelDescriptor])


def descriptor_dict(descriptor: Any) -> dict[str, Any]:
    """A registered descriptor in its wire form."""
    raw: dict[str, Any] = {
        "id": descriptor.id,
        "type": descriptor.type,
        "label": descriptor.label or "",
        "direction": descriptor.direction or "bidirectional",
    }
    for key, attr in (("address", "address"), ("metadata", "metadata")):
        value = getattr(descriptor, attr, None)
        if isinstance(value, Mapping):
            raw[key] = dict(value)
    initially_open = getattr(descriptor, "initially_open", None)
    if initially_open is not None:
        raw["initiallyOpen"] = initially_open
    return raw


class ChannelReplica:
    """See the module docstring."""

    def __init__(self, registry: ChannelRegistry, changed: Callable[[str], None]) -> None:
        self.registry = registry
        self._changed = changed
        self.fetches = 0
        self.fetch_failures = 0

    def local(self, server_id: str) -> list[dict[str, Any]]:
        """The descriptors this instance holds for ``server_id`` (what its owner answers,
        with how the connector stands)."""
        return [descriptor_dict(e.descriptor) for e in self.registry.server_entries(server_id)]

    def drop(self, server_id: str) -> None:
        """Forget the replica of ``server_id`` (nobody owns it, or this instance will)."""
        if self.registry.server_size(server_id):
            self.registry.remove_server(server_id)
            self._changed(server_id)

    async def refresh(self, remote: RemoteOwner) -> int | None:
        """Fetch ``remote``'s channels from its owner and hold them instead of the old ones;
        the owner's ``channels_version`` they are (None: not fetched, try again later)."""
        sid = remote.server_id
        if remote.owner_instance is None:
            self.drop(sid)
            return 0
        instance = remote.owner_instance
        try:
            raw = await remote.ask("channels", {}, remote.config.request_timeout)
            descriptors = _DESCRIPTORS.validate_python(raw["channels"])
        except (TransportError, ValidationError, KeyError, TypeError) as exc:
            # Kept as they were; the node tries again at its next tick.
            self.fetch_failures += 1
            log.debug("cluster.channels_fetch_failed", server_id=sid, error=str(exc))
            return None
        self.fetches += 1
        if remote.owner_instance == instance:
            # How it stands now: fresher than the owner's last heartbeat.
            remote.update(instance, raw.get("owner"), int(raw.get("beat", 0)))
        self.registry.remove_server(sid)
        self.registry.register(sid, descriptors)
        self._changed(sid)
        return int(raw.get("channels_version", 0))
