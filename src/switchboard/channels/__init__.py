"""switchboard.channels: the pure channel registry, its indexes and name resolution.

Nothing in this package performs I/O, awaits, reads a clock or logs an effect: the host asks,
the registry answers with decisions and results, and the host carries them out. The registry
core is at the top (:mod:`.ref`, :mod:`.descriptor`, :mod:`.records`, :mod:`.index` with
:mod:`.buckets` and :mod:`.dm_index`, :mod:`.registry`, :mod:`.errors`); name resolution is
:mod:`.names` and the ``>>`` grammar :mod:`.prose`. The pure rules of the lifecycle and of
tune-outs sit beside their I/O: :mod:`switchboard.lifecycle.rules`,
:mod:`switchboard.tuneouts.rules`.
"""

from switchboard.channels.descriptor import CheckedDescriptors, DescriptorLike, Rejected
from switchboard.channels.errors import ChannelsError
from switchboard.channels.index import IndexStatistics
from switchboard.channels.names.errors import (
    AmbiguousName,
    ChannelNameError,
    InboundOnly,
    InvalidName,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.history import DmMeta, LabelHistory, LabelSighting, extract_dm_meta
from switchboard.channels.names.naming import ChannelNames
from switchboard.channels.names.picking import NO_OWN, Own
from switchboard.channels.names.resolve import server_named
from switchboard.channels.names.tiers import Match, Tier
from switchboard.channels.names.wording import DELIVER, LOOKUP, POST, RUN, SPEECH, Caller, Choice
from switchboard.channels.prose.drafts import UNSENT, Draft, DraftBox, NoUnsentDraft
from switchboard.channels.prose.grammar import (
    ParseResult,
    Segment,
    is_prose_target_token,
    parse_speech,
)
from switchboard.channels.prose.route import (
    BLOCKED_STICKY,
    NO_STICKY,
    Disposition,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
)
from switchboard.channels.prose.stream import Piece, StreamingRouter
from switchboard.channels.records import (
    AllAccepted,
    Authorizer,
    BatchAuthorizer,
    ChannelEntry,
    ItemResult,
    RegistryChange,
)
from switchboard.channels.ref import ChannelRef, qualified_name
from switchboard.channels.registry import ChannelRegistry

__all__ = [
    "BLOCKED_STICKY",
    "DELIVER",
    "LOOKUP",
    "NO_OWN",
    "NO_STICKY",
    "POST",
    "RUN",
    "SPEECH",
    "UNSENT",
    "AllAccepted",
    "AmbiguousName",
    "Authorizer",
    "BatchAuthorizer",
    "Caller",
    "ChannelEntry",
    "ChannelNameError",
    "ChannelNames",
    "ChannelRef",
    "ChannelRegistry",
    "ChannelsError",
    "CheckedDescriptors",
    "Choice",
    "DescriptorLike",
    "Disposition",
    "DmMeta",
    "Draft",
    "DraftBox",
    "InboundOnly",
    "IndexStatistics",
    "InvalidName",
    "ItemResult",
    "LabelHistory",
    "LabelSighting",
    "Match",
    "NoUnsentDraft",
    "Own",
    "OwnChannelGone",
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
    "Tier",
    "UnknownName",
    "extract_dm_meta",
    "is_prose_target_token",
    "parse_speech",
    "qualified_name",
    "server_named",
]
