"""switchboard.channels: the pure channel registry, its indexes and name resolution.

Nothing in this package performs I/O, awaits, reads a clock or logs an effect: the host asks,
the registry answers with decisions and results, and the host carries them out.

- :mod:`~switchboard.channels.ref`: :class:`ChannelRef`, the ``(server_id, channel_id)`` key.
- :mod:`~switchboard.channels.descriptor`: the descriptor shape read, and key normalization.
- :mod:`~switchboard.channels.records`: entries, itemized results, change summaries.
- :mod:`~switchboard.channels.index`: storage and the O(1) name indexes.
- :mod:`~switchboard.channels.resolve`: name tiers, refusal of ambiguity, ``name_for``.
- :mod:`~switchboard.channels.registry`: :class:`ChannelRegistry`, register/changed/remove.
- :mod:`~switchboard.channels.prose`, ``prose_route``, ``prose_stream``, ``prose_drafts``: the
  ``>>`` grammar, its modes, the streaming router and kept drafts.
"""

from switchboard.channels.descriptor import DescriptorLike, Rejected
from switchboard.channels.errors import AmbiguousName, ChannelNameError, UnknownName
from switchboard.channels.index import IndexStatistics
from switchboard.channels.prose import ParseResult, Segment, is_prose_target_token, parse_speech
from switchboard.channels.prose_drafts import UNSENT, Draft, DraftBox, NoUnsentDraft
from switchboard.channels.prose_route import (
    BLOCKED_STICKY,
    NO_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
)
from switchboard.channels.prose_stream import Piece, StreamingRouter
from switchboard.channels.records import Authorizer, ChannelEntry, ItemResult, RegistryChange
from switchboard.channels.ref import ChannelRef, qualified_name
from switchboard.channels.registry import ChannelRegistry

__all__ = [
    "BLOCKED_STICKY",
    "NO_STICKY",
    "UNSENT",
    "AmbiguousName",
    "Authorizer",
    "ChannelEntry",
    "ChannelNameError",
    "ChannelRef",
    "ChannelRegistry",
    "DescriptorLike",
    "Disposition",
    "Draft",
    "DraftBox",
    "IndexStatistics",
    "ItemResult",
    "NoUnsentDraft",
    "ParseResult",
    "Piece",
    "ProseMode",
    "RegistryChange",
    "Rejected",
    "Route",
    "Segment",
    "Sticky",
    "StreamingRouter",
    "TargetCheck",
    "UnknownName",
    "is_prose_target_token",
    "parse_speech",
    "qualified_name",
]
