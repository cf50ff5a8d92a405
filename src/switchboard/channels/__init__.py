"""switchboard.channels: the pure channel registry, its indexes and name resolution.

Nothing in this package performs I/O, awaits, reads a clock or logs an effect: the host asks,
the registry answers with decisions and results, and the host carries them out.

- :mod:`~switchboard.channels.ref`: :class:`ChannelRef`, the ``(server_id, channel_id)`` key.
- :mod:`~switchboard.channels.descriptor`: the descriptor shape read, and key normalization.
- :mod:`~switchboard.channels.records`: entries, itemized results, change summaries.
- :mod:`~switchboard.channels.index`: storage and the O(1) name indexes.
- :mod:`~switchboard.channels.resolve`: name tiers, refusal of ambiguity, ``name_for``.
- :mod:`~switchboard.channels.registry`: :class:`ChannelRegistry`, register/changed/remove.
"""

from switchboard.channels.descriptor import DescriptorLike, Rejected
from switchboard.channels.errors import AmbiguousName, ChannelNameError, UnknownName
from switchboard.channels.index import IndexStatistics
from switchboard.channels.records import Authorizer, ChannelEntry, ItemResult, RegistryChange
from switchboard.channels.ref import ChannelRef, qualified_name
from switchboard.channels.registry import ChannelRegistry

__all__ = [
    "AmbiguousName",
    "Authorizer",
    "ChannelEntry",
    "ChannelNameError",
    "ChannelRef",
    "ChannelRegistry",
    "DescriptorLike",
    "IndexStatistics",
    "ItemResult",
    "RegistryChange",
    "Rejected",
    "UnknownName",
    "qualified_name",
]
