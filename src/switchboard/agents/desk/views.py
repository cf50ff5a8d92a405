"""What an agent is shown of the registered channels: the rows of ``channel_list``.

For each registered channel, in registry order, the name that picks it alone and the ``>>``
token that reaches it, both judged with the calling turn's own channels, so that every name
shown resolves back to the channel it is shown for (channel-registry.md §3.2, §4.7, §7.2). One
pass over the entries; each name is a few O(1) index probes, never a scan per entry.

What it deliberately does not know: MCP, servers' connection states, and lifecycle (the caller
passes ``desired``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from switchboard.channels import ChannelRef, ChannelRegistry

__all__ = ["ChannelRow", "channel_rows"]


@dataclass(frozen=True, slots=True)
class ChannelRow:
    """One registered channel as an agent sees it (see :class:`channel_rows`)."""

    ref: ChannelRef
    name: str | None
    prose_target: str | None
    label: str
    type: str
    direction: str
    open: bool
    desired: str


def channel_rows(
    registry: ChannelRegistry,
    own: Collection[ChannelRef],
    desired: Callable[[ChannelRef], str],
) -> list[ChannelRow]:
    """Every registered channel, in registry order, named for a turn with ``own`` channels.

    What it knows (channel-registry.md §3.2, §4.7, §7.2): for each registered channel, in registry
    order, the name that picks it alone and the ``>>`` token that reaches it, both judged with the
    calling turn's own channels, so that every name shown resolves back to the channel it is shown
    for, in that turn:

    - ``name``: the channel id when it picks the channel alone, else the server-qualified
      ``serverId:channelId`` when that does, else None (then only the channel id together with its
      server id reaches it). Switchboard always shows it (not only when the id is shared, as the
      reference does), so an agent never has to work out which string to pass.
    - ``prose_target``: the ``>>`` token for speech (``@name`` of a DM, ``#label``, the name, the
      qualified name: the first that round-trips), or None (an inbound-only channel, say).

    One pass over the entries; each name is a few O(1) index probes (plus the handful of own
    channels), never a scan of every channel per entry.
    """
    names = registry.names
    rows: list[ChannelRow] = []
    append = rows.append
    for entry in registry.entries():
        ref = entry.ref
        d = entry.descriptor
        append(
            ChannelRow(
                ref=ref,
                name=names.name_for(ref, own),
                prose_target=names.prose_target_for(ref, own),
                label=d.label or "",
                type=d.type or "",
                direction=d.direction or "bidirectional",
                open=entry.transport_open,
                desired=desired(ref),
            )
        )
    return rows
