"""The channels of connectors owned by other instances, kept in the local registry.

An agent names channels through its own instance's registry, whoever runs the connector.
The owner writes its connector's registrations into the PostgreSQL mirror
(:mod:`switchboard.cluster.pg.channels`) whenever they change; every other instance reads the
mirror again when it hears ``inval.channels:<server>``, when the ``channels:<server>`` version
row moved (polled every second), and when the connector's owner changes, and holds what it
read here. Only the router hears of such a change here: the lifecycle of a channel is its
owner's business, so no registration event is emitted for a replica. A connector nobody owns
has no replica (nothing of it is offered as a place to publish), and before this instance
starts a connector it drops the replica, so the connector's own registration replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog
from pydantic import TypeAdapter, ValidationError

from switchboard.channels import ChannelRegistry
from switchboard.protocol.channel_messages import ChannelDescriptor

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
        #: What each replica was last read as (channel id → wire descriptor): the next read
        #: changes only what differs.
        self._held: dict[str, dict[str, dict[str, Any]]] = {}

    def local(self, server_id: str) -> list[dict[str, Any]]:
        """The descriptors this instance holds for ``server_id`` (what its owner mirrors)."""
        return [descriptor_dict(e.descriptor) for e in self.registry.server_entries(server_id)]

    def drop(self, server_id: str) -> None:
        """Forget the replica of ``server_id`` (nobody owns it, or this instance will)."""
        self._held.pop(server_id, None)
        if self.registry.server_size(server_id):
            self.registry.remove_server(server_id)
            self._changed(server_id)

    def hold(self, server_id: str, raw: list[dict[str, Any]]) -> bool:
        """Hold ``raw`` (the mirror's descriptors of ``server_id``) instead of the old ones;
        False when they do not read as descriptors (the old ones are kept).

        Only what differs from the last read is changed in the registry: one channel added
        among 10,000 costs one registration here, not 10,000.
        """
        wanted = {str(d.get("id")): d for d in raw}
        before = self._held.get(server_id)
        try:
            if before is not None and self.registry.server_size(server_id) == len(before):
                added = [d for cid, d in wanted.items() if cid not in before]
                updated = [d for cid, d in wanted.items() if cid in before and before[cid] != d]
                removed = [cid for cid in before if cid not in wanted]
                if not (added or updated or removed):
                    return True
                self.registry.change(
                    server_id,
                    added=_DESCRIPTORS.validate_python(added),
                    removed=removed,
                    updated=_DESCRIPTORS.validate_python(updated),
                )
            else:
                descriptors = _DESCRIPTORS.validate_python(raw)
                if not descriptors and not self.registry.server_size(server_id):
                    self._held[server_id] = wanted
                    return True
                self.registry.remove_server(server_id)
                self.registry.register(server_id, descriptors)
        except ValidationError as exc:
            log.warning("cluster.channels_unreadable", server_id=server_id, error=str(exc))
            return False
        self._held[server_id] = wanted
        self._changed(server_id)
        return True
