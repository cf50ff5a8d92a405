"""The key of one channel: the pair (server id, channel id).

What this module knows: a channel id is unique only within the connection that registered it
(MCPL §14.2), so the pair is the only thing that names one channel without doubt. The pair is a
tuple and is used as a tuple everywhere a channel is keyed: ids routinely contain colons
(``discord:<guild>:<channel>``), so joining the two parts with a separator would let server
``a``'s channel ``b:room`` and server ``a:b``'s channel ``room`` share one key.

What it deliberately does not know: which pairs are registered, and how a typed name is
resolved to a pair. :func:`qualified_name` is a display and input form only; it is looked up
among registered pairs (see :mod:`switchboard.channels.index`) and never split.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ChannelRef", "qualified_name"]


class ChannelRef(NamedTuple):
    """One channel: the connection that registered it and the id it registered.

    Attributes:
        server_id: The id of the MCPL connection (server) that registered the channel.
        channel_id: The descriptor's ``id``, exactly as the server sent it.
    """

    server_id: str
    channel_id: str


def qualified_name(ref: ChannelRef) -> str:
    """Return ``"<server_id>:<channel_id>"``, the server-qualified name of ``ref``.

    The result is for display and for typed input. Several registered pairs may share one
    qualified name (server ``a`` with channel ``b:room`` and server ``a:b`` with channel
    ``room`` both give ``a:b:room``), so it is never used as a key and never parsed back.

    Args:
        ref: The channel to name.

    Returns:
        The server id, one colon, and the channel id.
    """
    return f"{ref[0]}:{ref[1]}"
